"""An A3C worker's loss (Quantum-Cheese/DeepReinforcementLearning_Pytorch#1): the stored log-probs are
gathered with torch.tensor([...]), which drops their graph, so the advantage term of the policy loss is
a constant; the actor learns only from the entropy bonus."""
import math
import torch
from torch import nn
import torch.nn.functional as F
from torch.distributions import Normal


class ActorContinous(nn.Module):
    def __init__(self, state_size, action_size):
        super().__init__()
        self.body = nn.Linear(state_size, 16)
        self.mu = nn.Linear(16, action_size)
        self.sigma = nn.Linear(16, action_size)

    def forward(self, s):
        h = torch.tanh(self.body(s))
        return self.mu(h), F.softplus(self.sigma(h)) + 1e-3


torch.manual_seed(0)
policy, value_net = ActorContinous(4, 1), nn.Linear(4, 1)
policy_optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
value_optimizer = torch.optim.Adam(value_net.parameters(), lr=1e-3)
gamma, memory = 0.9, []
for t in range(8):
    state = torch.randn(4)
    mu, sigma = policy(state)
    dist = Normal(mu, sigma)
    action = dist.sample()
    memory.append([state, dist.log_prob(action), float(-action.abs())])
states = torch.stack([t[0] for t in memory])
log_probs = torch.tensor([t[1] for t in memory], dtype=torch.float).view(-1, 1)  # <- tensor_rewrap
rewards = [t[2] for t in memory]
fur_rewards = torch.tensor([sum(gamma ** k * r for k, r in enumerate(rewards[i:])) for i in range(8)]).view(-1, 1)
V = value_net(states)
value_loss = F.mse_loss(fur_rewards, V)
(mu, sigma) = policy(states)
entropy = 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(Normal(mu, sigma).scale)
advantage = (fur_rewards - V).detach()
policy_loss = (-advantage * log_probs - 0.005 * entropy).mean()
value_optimizer.zero_grad()
value_loss.backward()
value_optimizer.step()
policy_optimizer.zero_grad()
policy_loss.backward()
policy_optimizer.step()
print(f"value loss {value_loss.item():.4f} policy loss {policy_loss.item():.4f} mu grad {policy.mu.weight.grad}")
