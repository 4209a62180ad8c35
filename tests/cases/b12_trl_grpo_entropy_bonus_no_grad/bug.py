"""TRL's GRPO trainer with entropy regularisation (huggingface/trl#6140, review "Entropy bonus lacks gradients"):
the new term `loss = loss - apply_coef * entropy_loss` uses the entropies returned by
`_get_per_token_logps_and_entropies`, which computes them inside `torch.no_grad()` (they were meant for logging
and masking), so the bonus changes the reported loss without contributing gradients and does not encourage
exploration (the fix: compute the entropies the bonus uses with grad)."""
import torch
import torch.nn.functional as F
from torch import nn


def entropy_from_logits(logits):
    return -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1)


def _get_per_token_logps_and_entropies(model, input_ids):
    logits = model(input_ids[:, :-1])
    logps = logits.log_softmax(-1).gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    with torch.no_grad():
        entropies = entropy_from_logits(logits)  # <- cut_term
    return logps, entropies


class TinyPolicy(nn.Module):
    def __init__(self, vocab=12, dim=16):
        super().__init__()
        self.embed, self.lm_head = nn.Embedding(vocab, dim), nn.Linear(dim, vocab)
        self.rnn = nn.GRU(dim, dim, batch_first=True)

    def forward(self, ids):
        return self.lm_head(self.rnn(self.embed(ids))[0])


torch.manual_seed(0)
model = TinyPolicy()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
completions = torch.randint(0, 12, (8, 6))  # 2 prompts x 4 generations, sampled earlier
rewards = (completions == 3).float().mean(1)
advantages = (rewards - rewards.view(2, 4).mean(1).repeat_interleave(4)) / (rewards.std() + 1e-4)
old_per_token_logps = torch.full((8, 5), -2.48)  # log-probs recorded at generation
entropy_coef = 0.01
for step in range(3):
    optimizer.zero_grad()
    logps, entropies = _get_per_token_logps_and_entropies(model, completions)
    per_token_loss = -torch.exp(logps - old_per_token_logps) * advantages.unsqueeze(1)
    loss = per_token_loss.mean()
    entropy_loss = entropies.mean()
    loss = loss - entropy_coef * entropy_loss
    loss.backward()
    optimizer.step()
    print(f"step {step}: entropy {entropy_loss.item():.4f}, entropy term requires grad: {entropy_loss.requires_grad}")
