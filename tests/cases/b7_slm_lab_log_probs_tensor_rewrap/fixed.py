"""The fixed twin: torch.stack keeps the log-probabilities in the graph, so the policy loss trains the actor
(kengz/SLM-Lab#133)."""
import torch
import torch.nn.functional as F
from torch import nn


class ActorCritic(nn.Module):
    def __init__(self, obs_dim=4, n_actions=2):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs_dim, 32), nn.Tanh())
        self.actor = nn.Linear(32, n_actions)
        self.critic = nn.Linear(32, 1)

    def forward(self, obs):
        h = self.body(obs)
        return self.actor(h), self.critic(h).squeeze(-1)


torch.manual_seed(0)
net = ActorCritic()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
actor_before = net.actor.weight.detach().clone()
for episode in range(5):
    log_probs, values, rewards = [], [], []
    for t in range(8):
        obs = torch.randn(4)
        logits, value = net(obs)
        dist = torch.distributions.Categorical(logits=logits)
        action = dist.sample()
        log_probs.append(dist.log_prob(action))
        values.append(value)
        rewards.append(1.0 if action.item() == int(obs[0] > 0) else 0.0)
    returns = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
    values = torch.stack(values)
    advantages = (returns - values).detach()
    log_probs = torch.stack(log_probs)
    policy_loss = -(log_probs * advantages).mean()
    value_loss = F.mse_loss(values, returns)
    loss = policy_loss + 0.5 * value_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("actor head changed:", not torch.equal(actor_before, net.actor.weight))
