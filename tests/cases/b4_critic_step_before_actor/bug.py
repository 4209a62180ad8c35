"""MADDPG with the critic updated before the actor (starry-sky6688/MADDPG#27): the actor loss was
computed through the critic, whose weights critic_optim.step() then changes in place, so
actor_loss.backward() raises "one of the variables needed for gradient computation has been modified
by an inplace operation"."""
import torch
from torch import nn

torch.manual_seed(0)
actor = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2), nn.Tanh())
critic = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
actor_target = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2), nn.Tanh())
critic_target = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
actor_optim = torch.optim.Adam(actor.parameters(), lr=1e-3)
critic_optim = torch.optim.Adam(critic.parameters(), lr=1e-3)
o, u, r, o_next = torch.randn(32, 6), torch.rand(32, 2) * 2 - 1, torch.randn(32, 1), torch.randn(32, 6)
gamma = 0.95
for step in range(2):
    with torch.no_grad():
        q_next = critic_target(torch.cat([o_next, actor_target(o_next)], dim=1))
        target_q = r + gamma * q_next
    q_value = critic(torch.cat([o, u], dim=1))
    critic_loss = (target_q - q_value).pow(2).mean()
    actor_loss = -critic(torch.cat([o, actor(o)], dim=1)).mean()
    critic_optim.zero_grad()
    critic_loss.backward()
    critic_optim.step()  # <- inplace_saved
    actor_optim.zero_grad()
    actor_loss.backward()
    actor_optim.step()
    print(f"step {step}: critic {critic_loss.item():.4f} actor {actor_loss.item():.4f}")
