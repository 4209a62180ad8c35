"""DQN with a target network made by copy.deepcopy and synced with load_state_dict, a replay
buffer, Q(s,a) by gather, targets under no_grad, Huber loss, gradient clipping by value."""
import copy
import os
import random
from collections import deque, namedtuple

import torch
import torch.nn as nn
import torch.nn.functional as F

Transition = namedtuple("Transition", ("state", "action", "next_state", "reward"))


class DQN(nn.Module):
    def __init__(self, n_observations, n_actions):
        super().__init__()
        self.layer1 = nn.Linear(n_observations, 32)
        self.layer2 = nn.Linear(32, 32)
        self.layer3 = nn.Linear(32, n_actions)

    def forward(self, x):
        x = F.relu(self.layer1(x))
        x = F.relu(self.layer2(x))
        return self.layer3(x)


def main():
    random.seed(0)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    policy_net = DQN(4, 2)
    target_net = copy.deepcopy(policy_net)
    target_net.eval()
    optimizer = torch.optim.AdamW(policy_net.parameters(), lr=1e-3, amsgrad=True)
    memory = deque([], maxlen=100)
    GAMMA, BATCH_SIZE, TAU = 0.99, 8, 0.005
    state = torch.randn(1, 4)
    for step in range(20):
        with torch.no_grad():
            action = policy_net(state).max(1).indices.view(1, 1)
        next_state = state * 0.9 + torch.randn(1, 4) * 0.1
        reward = torch.tensor([1.0 - state.abs().mean().item()])
        memory.append(Transition(state, action, next_state, reward))
        state = next_state
        if len(memory) < BATCH_SIZE:
            continue
        transitions = random.sample(memory, BATCH_SIZE)
        batch = Transition(*zip(*transitions))
        state_batch = torch.cat(batch.state)
        action_batch = torch.cat(batch.action)
        reward_batch = torch.cat(batch.reward)
        next_batch = torch.cat(batch.next_state)
        state_action_values = policy_net(state_batch).gather(1, action_batch)
        with torch.no_grad():
            next_state_values = target_net(next_batch).max(1).values
        expected = (next_state_values * GAMMA) + reward_batch
        loss = nn.SmoothL1Loss()(state_action_values, expected.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
        if step % 5 == 0:
            target_net.load_state_dict(policy_net.state_dict())
        else:
            target_state = target_net.state_dict()
            policy_state = policy_net.state_dict()
            for key in policy_state:
                target_state[key] = policy_state[key] * TAU + target_state[key] * (1 - TAU)
            target_net.load_state_dict(target_state)
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"policy": policy_net.state_dict(), "target": target_net.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
