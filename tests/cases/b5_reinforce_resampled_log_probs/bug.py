"""pytorch/examples' REINFORCE with a replay memory (pytorch/examples#151): the log-probabilities, with
their graphs, are kept as experience and finish_episode() is called more than once to sample from it;
the second update backpropagates through graphs the first one freed and raises."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical


class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(4, 16)
        self.affine2 = nn.Linear(16, 2)
        self.saved_log_probs = []
        self.rewards = []

    def forward(self, x):
        return F.softmax(self.affine2(F.relu(self.affine1(x))), dim=1)


random.seed(0)
torch.manual_seed(0)
policy = Policy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)
gamma = 0.99
memory = []


def select_action(state):
    probs = policy(state.unsqueeze(0))
    m = Categorical(probs)
    action = m.sample()
    policy.saved_log_probs.append(m.log_prob(action))
    return action.item()


def finish_episode(batch_size=8):
    batch = random.sample(memory, min(batch_size, len(memory)))
    policy_loss = torch.cat([-log_prob * R for log_prob, R in batch]).sum()
    optimizer.zero_grad()
    policy_loss.backward()
    optimizer.step()
    return policy_loss.item()


for i_episode in range(2):
    states = torch.randn(5, 4)
    for state in states:
        action = select_action(state)
        policy.rewards.append(1.0 if action == int(state[0] > 0) else 0.0)
    R, returns = 0, []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    memory.extend(zip(policy.saved_log_probs, returns))  # <- autograd_error
    del policy.rewards[:]
    del policy.saved_log_probs[:]
    for update in range(2):
        print(f"episode {i_episode} update {update}: policy loss {finish_episode():.4f}")
