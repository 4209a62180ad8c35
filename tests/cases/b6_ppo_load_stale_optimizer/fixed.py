"""The fixed twin: load() loads the saved states into the existing networks, which the optimizers hold, so the
updates after a restart train them."""
import torch
from torch import nn


class FCPolicy(nn.Module):
    def __init__(self, n_states, n_actions, n_neurons=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(n_states, n_neurons), nn.ReLU(), nn.Linear(n_neurons, n_actions))
        self.log_std = nn.Parameter(torch.zeros(n_actions))

    def predict(self, states, actions):
        dist = torch.distributions.Normal(self.net(states), self.log_std.exp())
        return dist.log_prob(actions).sum(-1), dist.entropy().sum(-1)


class PPOAgent:
    def __init__(self, n_states, n_actions, lr=1e-3):
        self._n_states, self._n_actions = n_states, n_actions
        self._policy = FCPolicy(n_states, n_actions)
        self._value = nn.Sequential(nn.Linear(n_states, 16), nn.ReLU(), nn.Linear(16, 1))
        self._policy_optimizer = torch.optim.Adam(self._policy.parameters(), lr=lr)
        self._value_optimizer = torch.optim.Adam(self._value.parameters(), lr=lr)

    @property
    def state(self):
        return {"policy_state": self._policy.state_dict(), "value_state": self._value.state_dict()}

    def load(self, state):
        self._policy.load_state_dict(state["policy_state"])
        self._value.load_state_dict(state["value_state"])

    def update(self, states, actions, returns, clip=0.1):
        with torch.no_grad():
            log_p_old = self._policy.predict(states, actions)[0]
            gaes = returns - self._value(states).squeeze(-1)
        log_p_new, entropy = self._policy.predict(states, actions)
        ratio = (log_p_new - log_p_old).exp()
        policy_loss = -torch.min(gaes * ratio, gaes * ratio.clamp(1 - clip, 1 + clip)).mean() - 0.01 * entropy.mean()
        self._policy_optimizer.zero_grad()
        policy_loss.backward()
        self._policy_optimizer.step()
        value_loss = (returns - self._value(states).squeeze(-1)).pow(2).mean()
        self._value_optimizer.zero_grad()
        value_loss.backward()
        self._value_optimizer.step()
        return policy_loss.item(), value_loss.item()


torch.manual_seed(0)
states, actions, returns = torch.randn(20, 4), torch.randn(20, 1), torch.randn(20)
first_run = PPOAgent(4, 1)
first_run.update(states, actions, returns)
saved_state = first_run.state
agent = PPOAgent(4, 1)
agent.load(saved_state)
before = agent._policy.net[0].weight.detach().clone()
for episode in range(3):
    p_loss, v_loss = agent.update(states, actions, returns)
    print(f"episode {episode}: policy loss {p_loss:.4f} value loss {v_loss:.4f}")
print("policy changed after restart:", not torch.equal(before, agent._policy.net[0].weight))
