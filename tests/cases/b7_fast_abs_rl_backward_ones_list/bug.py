"""The actor-critic extractor of fast_abs_rl (ChenRocks/fast_abs_rl#73): the critic loss and the per-step policy
losses are pushed back together with autograd.backward([critic_loss] + losses, [torch.ones(1)] * (1 + len(losses))),
shape-(1,) gradients for 0-dim losses, which raises "Mismatch in shape: grad_output[0] has a shape of
torch.Size([1]) and output[0] has a shape of torch.Size([])"."""
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
    autograd.backward([critic_loss] + losses, [torch.ones(1)] * (1 + len(losses)))  # <- autograd_error
    optimizer.step()
    print(f"iteration {it}: reward {rewards.mean().item():.3f}")
