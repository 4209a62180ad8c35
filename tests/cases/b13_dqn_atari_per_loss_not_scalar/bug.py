"""DQN-Atari-Agents, DQN with prioritized replay (BY571/DQN-Atari-Agents#5): `learn_per` builds
`loss = td_error.pow(2)*weights.mean()`, so the mean applies to the importance weights only and the loss stays
a [batch_size, 1] vector; `loss.backward()` fails with "grad can be implicitly created only for scalar
outputs". The fix moves the bracket: `loss = (td_error.pow(2)*weights).mean()`."""
import torch
import torch.nn.functional as F
from torch import nn


class QNetwork(nn.Module):
    def __init__(self, state_size, action_size, layer_size=64):
        super().__init__()
        self.head_1 = nn.Linear(state_size, layer_size)
        self.ff_1 = nn.Linear(layer_size, action_size)

    def forward(self, x):
        return self.ff_1(F.relu(self.head_1(x)))


class DQNAgent:
    def __init__(self, state_size=4, action_size=2, gamma=0.99):
        self.gamma = gamma
        self.qnetwork_local = QNetwork(state_size, action_size)
        self.qnetwork_target = QNetwork(state_size, action_size).requires_grad_(False)
        self.qnetwork_target.load_state_dict(self.qnetwork_local.state_dict())
        self.optimizer = torch.optim.Adam(self.qnetwork_local.parameters(), lr=1e-3)

    def learn_per(self, experiences):
        states, actions, rewards, next_states, dones, weights = experiences
        self.optimizer.zero_grad()
        Q_targets_next = self.qnetwork_target(next_states).max(1)[0].unsqueeze(1)
        Q_targets = rewards + self.gamma * Q_targets_next * (1 - dones)
        Q_expected = self.qnetwork_local(states).gather(1, actions)
        td_error = Q_targets - Q_expected
        loss = td_error.pow(2)*weights.mean()  # <- autograd_error
        loss.backward()
        self.optimizer.step()
        return loss.detach().mean().item()


torch.manual_seed(0)
agent = DQNAgent()
batch = 16
before = agent.qnetwork_local.head_1.weight.detach().clone()
for step in range(2):
    experiences = (torch.randn(batch, 4), torch.randint(0, 2, (batch, 1)), torch.randn(batch, 1),
                   torch.randn(batch, 4), torch.zeros(batch, 1), torch.rand(batch, 1))
    print(f"step {step}: loss {agent.learn_per(experiences):.4f}")
print(f"head_1 changed: {not torch.equal(before, agent.qnetwork_local.head_1.weight)}")
