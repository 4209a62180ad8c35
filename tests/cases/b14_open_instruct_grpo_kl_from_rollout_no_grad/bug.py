"""open-instruct's GRPO trainer (allenai/open-instruct#530, fixed by #531): the KL terms are computed during the
rollout, inside `torch.no_grad()`, from the policy's log-probs of the sampled responses, and that `kl` is then added
to the per-token policy loss in the training epochs, "adding the KL loss to the GRPO loss will not result in
minimization of KL divergence" (the fix recomputes the KL from the training forward's `new_logprobs`)."""
import torch
from torch import nn


class TinyLM(nn.Module):
    def __init__(self, vocab=16, dim=24):
        super().__init__()
        self.embed, self.lm_head = nn.Embedding(vocab, dim), nn.Linear(dim, vocab)

    def forward(self, ids):
        return self.lm_head(torch.tanh(self.embed(ids)))


def forward(model, query_responses, responses, context_length, temperature=1.0):
    logits = model(query_responses)[:, context_length - 1:-1] / temperature
    return logits.log_softmax(-1).gather(-1, responses.unsqueeze(-1)).squeeze(-1)


def masked_mean(values, mask):
    return (values * mask).sum() / mask.sum()


torch.manual_seed(0)
policy, ref_policy = TinyLM(), TinyLM().requires_grad_(False)
optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3)
beta, cliprange, context_length = 0.05, 0.2, 3
query_responses = torch.randint(0, 16, (8, 9))
responses = query_responses[:, context_length:]
padding_mask = torch.zeros(8, 6, dtype=torch.bool)
with torch.no_grad():
    logprob = forward(policy, query_responses, responses, context_length)  # <- cut_term
    ref_logprob = forward(ref_policy, query_responses, responses, context_length)
    kl = logprob - ref_logprob
    scores = (responses == 5).float().mean(1)
    advantages = (scores - scores.view(2, 4).mean(1).repeat_interleave(4)) / (scores.std() + 1e-8)
for epoch_idx in range(2):
    new_logprobs = forward(policy, query_responses, responses, context_length)
    if epoch_idx == 0:
        old_logprobs = new_logprobs.detach()
    ratio = torch.exp(new_logprobs - old_logprobs)
    pg_losses = -advantages[:, None] * ratio
    pg_losses2 = -advantages[:, None] * torch.clamp(ratio, 1.0 - cliprange, 1.0 + cliprange)
    pg_loss_max = torch.max(pg_losses, pg_losses2)
    loss = masked_mean(pg_loss_max + beta * kl, ~padding_mask)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch_idx}: loss {loss.item():.4f}, kl {kl.mean().item():.4f} (kl requires grad: {kl.requires_grad})")
