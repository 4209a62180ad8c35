"""The fixed twin: the temperature is evaluated from log_alpha at each use (rail-berkeley/softlearning#177), so every
backward has its own graph and alpha follows log_alpha."""
import torch
import torch.nn.functional as F
from torch import nn


class Agent:
    def __init__(self, obs_dim=6, act_dim=4):
        self.actor = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, 2 * act_dim))
        self.critic = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-4)
        self.expected_entropy = -float(act_dim)
        self.log_alpha = torch.tensor(0.0, requires_grad=True)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=0.003)

    @property
    def alpha(self):
        return self.log_alpha.exp()

    def sample(self, obs):
        mean, log_std = self.actor(obs).chunk(2, -1)
        dist = torch.distributions.Normal(mean, log_std.clamp(-5, 2).exp())
        u = dist.rsample()
        log_prob = (dist.log_prob(u) - torch.log(1 - torch.tanh(u).pow(2) + 1e-6)).sum(-1, keepdim=True)
        return torch.tanh(u), log_prob

    def update(self, obs, act, rew):
        critic_loss = F.mse_loss(self.critic(torch.cat([obs, act], -1)), rew)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()
        new_act, log_prob = self.sample(obs)
        actor_loss = (self.alpha * log_prob - self.critic(torch.cat([obs, new_act], -1))).mean()
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        self.actor_optimizer.step()
        alpha_loss = -(self.alpha * (log_prob + self.expected_entropy).detach()).mean()
        self.alpha_optimizer.zero_grad()
        alpha_loss.backward()
        self.alpha_optimizer.step()


torch.manual_seed(0)
agent = Agent()
for step in range(3):
    agent.update(torch.randn(16, 6), torch.rand(16, 4) * 2 - 1, torch.randn(16, 1))
    print(f"step {step}: log_alpha {agent.log_alpha.item():.4f}")
