"""PAPO's double entropy regularization (MikeWangWZHL/PAPO#20): the entropy bonus on the masked-image policy is
computed from aug_log_probs, which come from compute_log_prob, a @torch.no_grad() rollout pass made before the
update, so that loss term has no gradient and does not regularize the policy ("your observation is accurate"; the
fix is an extra forward on the masked input inside the update step)."""
import torch
from torch import nn

torch.manual_seed(0)
policy = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 6))
optimizer = torch.optim.Adam(policy.parameters(), lr=3e-3)


@torch.no_grad()
def compute_log_prob(model, inputs):
    return torch.log_softmax(model(inputs), -1)


obs = torch.randn(64, 12)
masked_obs = obs * (torch.rand_like(obs) > 0.5)
actions = torch.randint(0, 6, (64,))
advantages = torch.randn(64)
for step in range(60):
    aug_log_probs = compute_log_prob(policy, masked_obs)  # <- cut_term
    log_probs = torch.log_softmax(policy(obs), -1)
    pg_loss = -(log_probs.gather(1, actions[:, None]).squeeze(1) * advantages).mean()
    aug_entropy = -(aug_log_probs.exp() * aug_log_probs).sum(-1).mean()
    loss = pg_loss - 0.5 * aug_entropy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 0 or step == 59:
        print(f"step {step}: masked-policy entropy {aug_entropy.item():.4f}, term has grad: {aug_entropy.requires_grad}")
