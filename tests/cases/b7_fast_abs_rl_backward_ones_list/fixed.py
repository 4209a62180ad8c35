"""The fixed twin: the gradients handed to autograd.backward are 0-dim, torch.ones(()), matching the 0-dim losses
(ChenRocks/fast_abs_rl#73)."""
import torch
import torch.nn.functional as F
from torch import autograd, nn

torch.manual_seed(0)
agent = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 5))
critic = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
optimizer = torch.optim.Adam(list(agent.parameters()) + list(critic.parameters()), lr=1e-3)
for it in range(3):
    states = torch.randn(6, 8)
    dist = torch.distributions.Categorical(logits=agent(states))
    actions = dist.sample()
    rewards = (actions == 2).float()
    baselines = critic(states).squeeze(-1)
    advantages = (rewards - baselines).detach()
    losses = [-lp * adv / len(actions) for lp, adv in zip(dist.log_prob(actions), advantages)]
    critic_loss = F.mse_loss(baselines, rewards)
    optimizer.zero_grad()
    autograd.backward([critic_loss] + losses, [torch.ones(())] * (1 + len(losses)))
    optimizer.step()
    print(f"iteration {it}: reward {rewards.mean().item():.3f}")
