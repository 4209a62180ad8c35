"""reinforcement-learning-kr/pg_travel#22, https://github.com/reinforcement-learning-kr/pg_travel/issues/22:
running the MuJoCo PPO agent (mujoco/agent/ppo_gae.py) raised "RuntimeError: one of the variables needed for
gradient computation has been modified by an inplace operation: [torch.FloatTensor [64, 1]], which is output 0 of
AsStridedBackward0, is at version 2; expected version 1 instead". train_model backs the joint loss
actor_loss + 0.5 * critic_loss up twice: loss.backward(retain_graph=True), critic_optim.step(), then
loss.backward() again for the actor. The critic step writes the critic's weights in place, and the second backward
still needs the critic's fc3.weight (64 -> 1, saved transposed as [64, 1]) for the critic_loss term. The thread has
no answer; the cause follows from the code and the message. Fix: one backward of the joint loss, then both steps.
Environment rollouts are replaced by a random memory of (state, action, reward, mask). The script raises."""
import math
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
hidden, gamma, lamda, clip_param, batch_size = 64, 0.99, 0.98, 0.2, 32


class Actor(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(num_inputs, hidden), nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, num_outputs)

    def forward(self, x):
        x = torch.tanh(self.fc2(torch.tanh(self.fc1(x))))
        mu = self.fc3(x)
        logstd = torch.zeros_like(mu)
        return mu, torch.exp(logstd), logstd


class Critic(nn.Module):
    def __init__(self, num_inputs):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(num_inputs, hidden), nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, 1)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.tanh(self.fc1(x)))))


def log_density(x, mu, std, logstd):
    var = std.pow(2)
    log_density = -(x - mu).pow(2) / (2 * var) - 0.5 * math.log(2 * math.pi) - logstd
    return log_density.sum(1, keepdim=True)


def get_gae(rewards, masks, values):
    rewards, masks = torch.Tensor(rewards), torch.Tensor(masks)
    returns, advants = torch.zeros_like(rewards), torch.zeros_like(rewards)
    running_returns, previous_value, running_advants = 0, 0, 0
    for t in reversed(range(0, len(rewards))):
        running_returns = rewards[t] + gamma * running_returns * masks[t]
        running_tderror = rewards[t] + gamma * previous_value * masks[t] - values.data[t]
        running_advants = running_tderror + gamma * lamda * running_advants * masks[t]
        returns[t], previous_value, advants[t] = running_returns, values.data[t], running_advants
    return returns, (advants - advants.mean()) / advants.std()


def train_model(actor, critic, states, actions, rewards, masks, actor_optim, critic_optim):
    values = critic(torch.Tensor(states))
    returns, advants = get_gae(rewards, masks, values)
    mu, std, logstd = actor(torch.Tensor(states))
    old_policy = log_density(torch.Tensor(actions), mu, std, logstd)
    old_values = critic(torch.Tensor(states))
    criterion = torch.nn.MSELoss()
    n = len(states)
    arr = np.arange(n)
    for epoch in range(2):
        np.random.shuffle(arr)
        for i in range(n // batch_size):
            batch_index = torch.LongTensor(arr[batch_size * i: batch_size * (i + 1)])
            inputs = torch.Tensor(states)[batch_index]
            returns_samples = returns.unsqueeze(1)[batch_index]
            advants_samples = advants.unsqueeze(1)[batch_index]
            actions_samples = torch.Tensor(actions)[batch_index]
            oldvalue_samples = old_values[batch_index].detach()
            mu, std, logstd = actor(inputs)
            ratio = torch.exp(log_density(actions_samples, mu, std, logstd) - old_policy.detach()[batch_index])
            loss = ratio * advants_samples
            values = critic(inputs)
            clipped_values = oldvalue_samples + torch.clamp(values - oldvalue_samples, -clip_param, clip_param)
            critic_loss = torch.max(criterion(clipped_values, returns_samples), criterion(values, returns_samples)).mean()
            clipped_loss = torch.clamp(ratio, 1.0 - clip_param, 1.0 + clip_param) * advants_samples
            actor_loss = -torch.min(loss, clipped_loss).mean()
            loss = actor_loss + 0.5 * critic_loss

            critic_optim.zero_grad()
            actor_optim.zero_grad()
            loss.backward()
            critic_optim.step()
            actor_optim.step()


actor, critic = Actor(11, 3), Critic(11)
actor_optim = torch.optim.Adam(actor.parameters(), lr=3e-4)
critic_optim = torch.optim.Adam(critic.parameters(), lr=3e-4, weight_decay=1e-3)
states, actions = np.random.randn(128, 11), np.random.randn(128, 3)
rewards, masks = np.random.randn(128), (np.random.rand(128) > 0.05).astype(np.float32)
a_before, c_before = actor.fc1.weight.detach().clone(), critic.fc1.weight.detach().clone()
train_model(actor, critic, states, actions, rewards, masks, actor_optim, critic_optim)
print("actor changed:", not torch.equal(a_before, actor.fc1.weight))
print("critic changed:", not torch.equal(c_before, critic.fc1.weight))
