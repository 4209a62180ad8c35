"""Actor-critic in the shape of pytorch/examples reinforcement_learning/actor_critic.py, with a tiny
built-in environment: saved_actions on the module, advantage = R - value.item(), smooth_l1_loss."""
import os
from collections import namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

SavedAction = namedtuple("SavedAction", ["log_prob", "value"])
eps = 1e-6


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 32)
        self.action_head = nn.Linear(32, 2)
        self.value_head = nn.Linear(32, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return action_prob, state_values


class Env:
    """A deterministic toy: the state drifts with the action; reward for staying near zero."""

    def __init__(self, generator):
        self.generator = generator

    def reset(self):
        self.state = torch.randn(4, generator=self.generator)
        self.t = 0
        return self.state.tolist()

    def step(self, action):
        self.state = self.state * 0.9 + (0.1 if action else -0.1)
        self.t += 1
        reward = float(1.0 - self.state.abs().mean())
        return self.state.tolist(), reward, self.t >= 10


model = Policy()
optimizer = optim.Adam(model.parameters(), lr=3e-2)


def select_action(state):
    state = torch.tensor(state).float()
    probs, state_value = model(state)
    m = Categorical(probs)
    action = m.sample()
    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()


def finish_episode(gamma=0.99):
    R = 0
    saved_actions = model.saved_actions
    policy_losses, value_losses, returns = [], [], []
    for r in model.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()
        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))
    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()
    del model.rewards[:]
    del model.saved_actions[:]
    return loss.item()


def main():
    torch.manual_seed(543)
    torch.set_num_threads(1)
    env = Env(torch.Generator().manual_seed(543))
    running_reward = 10
    for i_episode in range(4):
        state, ep_reward = env.reset(), 0
        for t in range(1, 100):
            action = select_action(state)
            state, reward, done = env.step(action)
            model.rewards.append(reward)
            ep_reward += reward
            if done:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        loss = finish_episode()
        print(f"Episode {i_episode}\tLast reward: {ep_reward:.2f}\tAverage reward: {running_reward:.2f}\tloss {loss:.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
