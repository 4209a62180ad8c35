"""The fixed twin: the TD target is detached and the critic's value is not (Jacklinkk/Graph_CAVs#9), so the critic
learns from its loss."""
import copy
import torch
import torch.nn.functional as F
from torch import nn


class Critic(nn.Module):
    def __init__(self, obs_dim=6, act_dim=2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, obs, act):
        return self.net(torch.cat([obs, act], -1))


torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 2), nn.Tanh())
critic = Critic()
actor_target, critic_target = copy.deepcopy(actor), copy.deepcopy(critic)
actor_optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
gamma, tau = 0.99, 0.01
critic_before = critic.net[0].weight.detach().clone()
for step in range(5):
    states, actions = torch.randn(32, 6), torch.rand(32, 2) * 2 - 1
    rewards, next_states, dones = torch.randn(32, 1), torch.randn(32, 6), torch.zeros(32, 1)
    q_target = rewards + gamma * (1 - dones) * critic_target(next_states, actor_target(next_states))
    q_eval = critic(states, actions)
    critic_loss = F.mse_loss(q_eval, q_target.detach())
    critic_optimizer.zero_grad()
    critic_loss.backward()
    critic_optimizer.step()

    actor_loss = -critic(states, actor(states)).mean()
    actor_optimizer.zero_grad()
    actor_loss.backward()
    actor_optimizer.step()
    with torch.no_grad():
        for target, source in ((actor_target, actor), (critic_target, critic)):
            for tp, sp in zip(target.parameters(), source.parameters()):
                tp.mul_(1 - tau).add_(tau * sp)
print(f"critic loss {critic_loss.item():.4f}; critic changed: {not torch.equal(critic_before, critic.net[0].weight)}")
assert not torch.equal(critic_before, critic.net[0].weight)
