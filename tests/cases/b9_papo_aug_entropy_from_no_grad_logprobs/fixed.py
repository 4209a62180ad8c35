"""The fixed twin: the masked input is forwarded again inside the update step, so the entropy term has a gradient
(MikeWangWZHL/PAPO#20)."""
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
    aug_log_probs = torch.log_softmax(policy(masked_obs), -1)
    log_probs = torch.log_softmax(policy(obs), -1)
    pg_loss = -(log_probs.gather(1, actions[:, None]).squeeze(1) * advantages).mean()
    aug_entropy = -(aug_log_probs.exp() * aug_log_probs).sum(-1).mean()
    loss = pg_loss - 0.5 * aug_entropy
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 20 == 0 or step == 59:
        print(f"step {step}: masked-policy entropy {aug_entropy.item():.4f}, term has grad: {aug_entropy.requires_grad}")
