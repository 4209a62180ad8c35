"""SkyRL's policy update with use_kl_loss=True (NovaSky-AI/SkyRL#1340, fixed by #1353): `compute_approx_kl` is
decorated with `@torch.no_grad()` (it was written for the KL-in-reward path), and the worker calls it on the policy's
action log-probs to build `kl_loss`, so the KL term is a plain number added to the policy loss and never pulls the
policy toward the reference model (the fix: no decorator on the helper; callers that need no grad wrap it)."""
import torch
from torch import nn


@torch.no_grad()
def compute_approx_kl(log_probs, log_probs_base, loss_mask=None, kl_estimator_type="k3"):
    log_ratio = log_probs - log_probs_base
    if kl_estimator_type == "k3":
        log_ratio = -log_ratio
        log_ratio = log_ratio.exp() - 1 - log_ratio
    if loss_mask is not None:
        log_ratio = log_ratio * loss_mask
    return log_ratio


def masked_mean(x, mask):
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


class TinyPolicy(nn.Module):
    def __init__(self, vocab=16, dim=24):
        super().__init__()
        self.embed, self.lm_head = nn.Embedding(vocab, dim), nn.Linear(dim, vocab)

    def forward(self, ids):
        return self.lm_head(torch.tanh(self.embed(ids)))


def action_log_probs_of(model, sequences):
    logits = model(sequences[:, :-1])
    return logits.log_softmax(-1).gather(-1, sequences[:, 1:].unsqueeze(-1)).squeeze(-1)


torch.manual_seed(0)
policy = TinyPolicy()
optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3)
sequences = torch.randint(0, 16, (8, 7))
loss_mask = torch.ones(8, 6)
advantages = torch.randn(8, 1)
old_action_log_probs = torch.full((8, 6), -2.77)
base_action_log_probs = torch.full((8, 6), -2.5)  # from the frozen reference model
kl_loss_coef, eps_clip = 0.5, 0.2
for step in range(3):
    action_log_probs = action_log_probs_of(policy, sequences)
    ratio = (action_log_probs - old_action_log_probs).exp()
    surr = torch.min(ratio * advantages, ratio.clamp(1 - eps_clip, 1 + eps_clip) * advantages)
    policy_loss = masked_mean(-surr, loss_mask)
    kl_loss = compute_approx_kl(action_log_probs, base_action_log_probs, loss_mask, "k3")  # <- cut_term
    kl_loss = masked_mean(kl_loss, loss_mask)
    loss = policy_loss + kl_loss_coef * kl_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: policy {policy_loss.item():.4f} kl {kl_loss.item():.4f} kl requires grad {kl_loss.requires_grad}")
