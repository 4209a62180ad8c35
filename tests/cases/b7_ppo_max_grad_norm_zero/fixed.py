"""The fixed twin: max_grad_norm is a positive bound (1.0, the default the PR keeps; it refuses 0), so clipping
scales the gradients down instead of erasing them (strands-labs/robots#2028)."""
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class RLTrainSpec:
    lr: float = 3e-4
    clip_eps: float = 0.2
    max_grad_norm: float = 1.0
    epochs: int = 3


torch.manual_seed(0)
spec = RLTrainSpec()
actor_critic = nn.ModuleDict({"pi": nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 2)),
                              "v": nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))})
log_std = nn.Parameter(torch.zeros(2))
actor_critic.register_parameter("log_std", log_std)
optimizer = torch.optim.Adam(actor_critic.parameters(), lr=spec.lr)
obs, actions, old_logp = torch.randn(64, 6), torch.randn(64, 2), torch.randn(64) - 2.0
advantages, returns = torch.randn(64), torch.randn(64)
checksum = sum(p.detach().sum() for p in actor_critic.parameters()).item()
for epoch in range(spec.epochs):
    dist = torch.distributions.Normal(actor_critic["pi"](obs), log_std.exp())
    ratio = (dist.log_prob(actions).sum(-1) - old_logp).exp()
    policy_loss = -torch.min(ratio * advantages, ratio.clamp(1 - spec.clip_eps, 1 + spec.clip_eps) * advantages).mean()
    value_loss = (actor_critic["v"](obs).squeeze(-1) - returns).pow(2).mean()
    loss = policy_loss + 0.5 * value_loss
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(actor_critic.parameters(), spec.max_grad_norm)
    optimizer.step()
after = sum(p.detach().sum() for p in actor_critic.parameters()).item()
print(f"parameter checksum before {checksum:.6f} after {after:.6f}")
