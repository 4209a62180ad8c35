"""GAE from scratch in a course notebook (jsboige/CoursIA#15256, "PT-10 dead critic"): the rollout collects the
critic's estimates with `values.append(value.item())`, so the value loss `F.mse_loss(values_t, returns)` is built
from plain numbers: it has no grad_fn, the critic head (a Linear(64, 1)) never receives a gradient and its
weights stay exactly at their initialisation while the actor trains. The fix keeps the value tensors for the
value loss (GAE itself uses their detached values)."""
import torch
import torch.nn.functional as F
from torch import nn


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=4, n_actions=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 64), nn.Tanh())
        self.actor = nn.Linear(64, n_actions)
        self.critic = nn.Linear(64, 1)

    def forward(self, obs):
        h = self.body(obs)
        return torch.distributions.Categorical(logits=self.actor(h)), self.critic(h).squeeze(-1)


def rollout(model, T=16, obs_dim=4):
    log_probs, values, rewards = [], [], []
    for t in range(T):
        obs = torch.randn(obs_dim)
        dist, value = model(obs)
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        values.append(value.item())  # <- item
        rewards.append((action == (obs[0] > 0).long()).float())
    return log_probs, values, rewards


def train_gae(model, optimizer, gamma=0.99, lam=0.95):
    log_probs, values, rewards = rollout(model)
    values_t = torch.tensor(values)
    v = values_t.detach()
    advantages, gae = torch.zeros(len(rewards)), 0.0
    for t in reversed(range(len(rewards))):
        next_v = v[t + 1] if t + 1 < len(rewards) else 0.0
        gae = rewards[t] + gamma * next_v - v[t] + gamma * lam * gae
        advantages[t] = gae
    returns = advantages + v
    pg_loss = -(torch.stack(log_probs) * advantages).mean()
    v_loss = F.mse_loss(values_t, returns)
    optimizer.zero_grad()
    (pg_loss + 0.5 * v_loss).backward()
    optimizer.step()


torch.manual_seed(0)
model = ActorCritic()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
critic_before = model.critic.weight.detach().clone()
for epoch in range(3):
    train_gae(model, optimizer)
print(f"critic grad set: {model.critic.weight.grad is not None}; "
      f"critic_weight_delta: {(model.critic.weight - critic_before).abs().max().item():.2e}")
