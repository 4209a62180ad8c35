"""The fixed twin: critic_parameters() returns the value encoder's parameters too, so the critic's optimizer
steps them (Replicable-MARL/MARLlib#146)."""
import copy
from functools import reduce

import torch
import torch.nn.functional as F
from torch import nn


class Base_MLP(nn.Module):
    def __init__(self, obs_size=8, num_outputs=4, hidden=(32, 32)):
        super().__init__()
        layers, input_dim = [], obs_size
        for out_dim in hidden:
            layers += [nn.Linear(input_dim, out_dim), nn.Tanh()]
            input_dim = out_dim
        self.action_encoder = nn.Sequential(*layers)
        self.action_branch = nn.Linear(input_dim, num_outputs)
        self.value_encoder = nn.Sequential(*copy.deepcopy(layers))
        self.value_branch = nn.Linear(input_dim, 1)
        self.actors = [self.action_encoder, self.action_branch]

    def forward(self, obs):
        self._last_obs = obs
        return self.action_branch(self.action_encoder(obs))

    def value_function(self):
        return self.value_branch(self.value_encoder(self._last_obs)).squeeze(1)

    def actor_parameters(self):
        return reduce(lambda x, y: x + y, map(lambda p: list(p.parameters()), self.actors))

    def critic_parameters(self):
        return list(self.value_encoder.parameters()) + list(self.value_branch.parameters())


torch.manual_seed(0)
model = Base_MLP()
actor_optimizer = torch.optim.Adam(model.actor_parameters(), lr=5e-4)
critic_optimizer = torch.optim.Adam(model.critic_parameters(), lr=5e-4)
obs, actions = torch.randn(64, 8), torch.randint(0, 4, (64,))
returns, advantages, old_logp = torch.randn(64), torch.randn(64), torch.full((64,), -1.386)  # from the rollout
encoder_before = model.value_encoder[0].weight.detach().clone()
for step in range(3):
    logits = model(obs)
    logp = F.log_softmax(logits, -1).gather(1, actions[:, None]).squeeze(1)
    ratio = torch.exp(logp - old_logp)
    policy_loss = -torch.min(ratio * advantages, ratio.clamp(0.8, 1.2) * advantages).mean()
    actor_optimizer.zero_grad()
    policy_loss.backward()
    actor_optimizer.step()
    value_loss = F.mse_loss(model.value_function(), returns)
    critic_optimizer.zero_grad()
    value_loss.backward()
    critic_optimizer.step()
print(f"value_encoder grad set: {model.value_encoder[0].weight.grad is not None}, "
      f"changed: {not torch.equal(model.value_encoder[0].weight, encoder_before)}")
