"""The fixed twin: `compute_approx_kl` has no `@torch.no_grad()` (NovaSky-AI/SkyRL#1353), so the KL loss term pulls
the policy toward the reference model."""
import torch
from torch import nn


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
    kl_loss = compute_approx_kl(action_log_probs, base_action_log_probs, loss_mask, "k3")
    kl_loss = masked_mean(kl_loss, loss_mask)
    loss = policy_loss + kl_loss_coef * kl_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: policy {policy_loss.item():.4f} kl {kl_loss.item():.4f} kl requires grad {kl_loss.requires_grad}")
kl_grads = torch.autograd.grad(masked_mean(compute_approx_kl(action_log_probs_of(policy, sequences),
                                                           base_action_log_probs), loss_mask),
                               [policy.embed.weight, policy.lm_head.weight])
assert all(g.abs().sum() > 0 for g in kl_grads)
print("kl term reaches the policy: True")
