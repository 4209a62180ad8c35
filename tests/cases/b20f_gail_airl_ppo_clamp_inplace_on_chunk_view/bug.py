"""gail-airl-ppo.pytorch (toshikwa/gail-airl-ppo.pytorch#13,
https://github.com/toshikwa/gail-airl-ppo.pytorch/issues/13): running train_expert.py (SAC) stops at the first
actor update with "RuntimeError: Output 1 of SplitBackward0 is a view and is being modified inplace. This view
is the output of a function that returns multiple views. Such functions do not allow the output views to be
modified inplace."
Why: StateDependentPolicy.sample splits the MLP output with .chunk(2, dim=-1) and clamps log_stds in place
(log_stds.clamp_(-20, 2)); chunk returns several views of one tensor that requires grad, and autograd refuses an
in-place write into them.
Fix (the reporter's; with it train_expert.py runs): clamp out of place, log_stds.clamp(-20, 2)."""
import math
import torch
from torch import nn


def build_mlp(input_dim, output_dim, hidden_units=(64, 64),
              hidden_activation=nn.Tanh(), output_activation=None):
    layers = []
    units = input_dim
    for next_units in hidden_units:
        layers.append(nn.Linear(units, next_units))
        layers.append(hidden_activation)
        units = next_units
    layers.append(nn.Linear(units, output_dim))
    return nn.Sequential(*layers)


def calculate_log_pi(log_stds, noises, actions):
    gaussian_log_probs = (-0.5 * noises.pow(2) - log_stds).sum(
        dim=-1, keepdim=True) - 0.5 * math.log(2 * math.pi) * log_stds.size(-1)
    return gaussian_log_probs - torch.log(1 - actions.pow(2) + 1e-6).sum(dim=-1, keepdim=True)


def reparameterize(means, log_stds):
    noises = torch.randn_like(means)
    us = means + noises * log_stds.exp()
    actions = torch.tanh(us)
    return actions, calculate_log_pi(log_stds, noises, actions)


class StateDependentPolicy(nn.Module):
    def __init__(self, state_shape, action_shape, hidden_units=(16, 16), hidden_activation=nn.ReLU(inplace=True)):
        super().__init__()
        self.net = build_mlp(input_dim=state_shape[0], output_dim=2 * action_shape[0],
                             hidden_units=hidden_units, hidden_activation=hidden_activation)

    def forward(self, states):
        return torch.tanh(self.net(states).chunk(2, dim=-1)[0])

    def sample(self, states):
        means, log_stds = self.net(states).chunk(2, dim=-1)
        return reparameterize(means, log_stds.clamp_(-20, 2))  # <- autograd_error


class TwinnedStateActionFunction(nn.Module):
    def __init__(self, state_shape, action_shape, hidden_units=(16, 16)):
        super().__init__()
        self.net1 = build_mlp(state_shape[0] + action_shape[0], 1, hidden_units, nn.ReLU(inplace=True))
        self.net2 = build_mlp(state_shape[0] + action_shape[0], 1, hidden_units, nn.ReLU(inplace=True))

    def forward(self, states, actions):
        xs = torch.cat([states, actions], dim=-1)
        return self.net1(xs), self.net2(xs)


torch.manual_seed(0)
state_shape, action_shape = (8,), (2,)
actor = StateDependentPolicy(state_shape, action_shape)
critic = TwinnedStateActionFunction(state_shape, action_shape)
optim_actor = torch.optim.Adam(actor.parameters(), lr=3e-3)
alpha = 0.2
before = [p.detach().clone() for p in actor.parameters()]

for step in range(5):  # SAC.update_actor
    states = torch.randn(32, *state_shape)
    actions, log_pis = actor.sample(states)
    qs1, qs2 = critic(states, actions)
    loss_actor = alpha * log_pis.mean() - torch.min(qs1, qs2).mean()
    optim_actor.zero_grad()
    loss_actor.backward()
    optim_actor.step()
    print(f"step {step} loss_actor={loss_actor.item():.4f}")

print("actor changed:", any(not torch.equal(b, p) for b, p in zip(before, actor.parameters())))
