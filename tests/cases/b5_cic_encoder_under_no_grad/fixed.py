"""The fixed twin: the current observation is encoded with gradients (as in DDPG's update); only the
next observation, the target side, is encoded under no_grad."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.convnet = nn.Sequential(nn.Conv2d(3, 4, 3, stride=2), nn.ReLU(), nn.Flatten())
        self.repr_dim = 4 * 3 * 3

    def forward(self, obs):
        return self.convnet(obs - 0.5)


class Critic(nn.Module):
    def __init__(self, obs_dim, action_dim, hidden_dim=16):
        super().__init__()
        self.q1 = nn.Sequential(nn.Linear(obs_dim + action_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 1))
        self.q2 = nn.Sequential(nn.Linear(obs_dim + action_dim, hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, 1))

    def forward(self, obs, action):
        h = torch.cat([obs, action], dim=-1)
        return self.q1(h), self.q2(h)


class CICAgent:
    def __init__(self, action_dim=2, skill_dim=2, lr=1e-3):
        self.encoder = Encoder()
        obs_dim = self.encoder.repr_dim + skill_dim
        self.actor = nn.Sequential(nn.Linear(obs_dim, 16), nn.ReLU(), nn.Linear(16, action_dim), nn.Tanh())
        self.critic = Critic(obs_dim, action_dim)
        self.critic_target = copy.deepcopy(self.critic)
        self.encoder_opt = torch.optim.Adam(self.encoder.parameters(), lr=lr)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=lr)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=lr)

    def aug_and_encode(self, obs):
        return self.encoder(obs)

    def update_critic(self, obs, action, reward, discount, next_obs):
        with torch.no_grad():
            next_action = self.actor(next_obs)
            target_Q1, target_Q2 = self.critic_target(next_obs, next_action)
            target_Q = reward + discount * torch.min(target_Q1, target_Q2)
        Q1, Q2 = self.critic(obs, action)
        critic_loss = F.mse_loss(Q1, target_Q) + F.mse_loss(Q2, target_Q)
        self.encoder_opt.zero_grad(set_to_none=True)
        self.critic_opt.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_opt.step()
        self.encoder_opt.step()
        return critic_loss.item()

    def update_actor(self, obs):
        Q1, Q2 = self.critic(obs, self.actor(obs))
        actor_loss = -torch.min(Q1, Q2).mean()
        self.actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_opt.step()
        return actor_loss.item()

    def update(self, batch):
        obs, action, reward, discount, next_obs, skill = batch
        obs = self.aug_and_encode(obs)
        with torch.no_grad():
            next_obs = self.aug_and_encode(next_obs)
        obs = torch.cat([obs, skill], dim=1)
        next_obs = torch.cat([next_obs, skill], dim=1)
        critic_loss = self.update_critic(obs, action, reward, discount, next_obs)
        actor_loss = self.update_actor(obs.detach())
        with torch.no_grad():
            for target, online in zip(self.critic_target.parameters(), self.critic.parameters()):
                target.mul_(0.99).add_(online, alpha=0.01)
        return critic_loss, actor_loss


torch.manual_seed(0)
agent = CICAgent()
batch = (torch.rand(8, 3, 8, 8), torch.rand(8, 2) * 2 - 1, torch.rand(8, 1), torch.full((8, 1), 0.99),
         torch.rand(8, 3, 8, 8), torch.rand(8, 2))
before = agent.encoder.convnet[0].weight.detach().clone()
for step in range(3):
    critic_loss, actor_loss = agent.update(batch)
    print(f"step {step}: critic_loss {critic_loss:.4f} actor_loss {actor_loss:.4f}")
print("encoder changed:", not torch.equal(before, agent.encoder.convnet[0].weight))
