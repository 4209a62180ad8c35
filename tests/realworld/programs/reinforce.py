"""REINFORCE in the shape of pytorch/examples reinforcement_learning/reinforce.py: log probs kept in a
list on the policy, returns normalised, policy loss summed with torch.cat."""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(4, 32)
        self.dropout = nn.Dropout(p=0.6)
        self.affine2 = nn.Linear(32, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        x = self.affine1(x)
        x = self.dropout(x)
        x = F.relu(x)
        action_scores = self.affine2(x)
        return F.softmax(action_scores, dim=1)


policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
eps = np.finfo(np.float32).eps.item()


def select_action(state):
    state = torch.from_numpy(state).float().unsqueeze(0)
    probs = policy(state)
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode(gamma=0.99):
    R = 0
    policy_loss = []
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    optimizer.zero_grad()
    policy_loss = torch.cat(policy_loss).sum()
    policy_loss.backward()
    optimizer.step()
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    return policy_loss.item()


def main():
    torch.manual_seed(543)
    torch.set_num_threads(1)
    rng = np.random.RandomState(543)
    for i_episode in range(4):
        state = rng.randn(4).astype(np.float32)
        ep_reward = 0.0
        for t in range(10):
            action = select_action(state)
            state = (state * 0.9 + (0.1 if action else -0.1)).astype(np.float32)
            reward = float(1.0 - np.abs(state).mean())
            policy.rewards.append(reward)
            ep_reward += reward
        loss = finish_episode()
        print(f"Episode {i_episode}\treward {ep_reward:.3f}\tloss {loss:.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save(policy.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
