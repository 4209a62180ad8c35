# SAC with torch 1.5.1 shows some error
# https://github.com/MrSyee/pg-is-all-you-need/issues/30
# In 05.SAC.ipynb, SACAgent.update_model() computes q_pred = min(qf_1(s, new_action), qf_2(s, new_action))
# for the V target / actor loss, then steps qf_1_optimizer / qf_2_optimizer (in-place updates of the
# Q weights saved by that forward), and only afterwards calls actor_loss.backward() through q_pred.
# With torch >= 1.5 this raises "one of the variables needed for gradient computation has been
# modified by an inplace operation". Fix (from the report, confirmed by the maintainer): move all the
# optimizer.step() calls to the end of update_model(), after every backward.
from typing import Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Normal

torch.manual_seed(0)
np.random.seed(0)


def init_layer_uniform(layer: nn.Linear, init_w: float = 3e-3) -> nn.Linear:
    layer.weight.data.uniform_(-init_w, init_w)
    layer.bias.data.uniform_(-init_w, init_w)
    return layer


class ReplayBuffer:
    def __init__(self, obs_dim: int, size: int, batch_size: int = 32):
        self.obs_buf = np.random.randn(size, obs_dim).astype(np.float32)
        self.next_obs_buf = np.random.randn(size, obs_dim).astype(np.float32)
        self.acts_buf = np.random.uniform(-1, 1, size).astype(np.float32)
        self.rews_buf = np.random.randn(size).astype(np.float32)
        self.done_buf = np.zeros(size, dtype=np.float32)
        self.max_size, self.batch_size = size, batch_size

    def sample_batch(self):
        idxs = np.random.choice(self.max_size, size=self.batch_size, replace=False)
        return dict(obs=self.obs_buf[idxs], next_obs=self.next_obs_buf[idxs],
                    acts=self.acts_buf[idxs], rews=self.rews_buf[idxs], done=self.done_buf[idxs])


class Actor(nn.Module):
    def __init__(self, in_dim: int, out_dim: int, log_std_min: float = -20, log_std_max: float = 2):
        super().__init__()
        self.log_std_min, self.log_std_max = log_std_min, log_std_max
        self.hidden1 = nn.Linear(in_dim, 32)
        self.hidden2 = nn.Linear(32, 32)
        self.log_std_layer = init_layer_uniform(nn.Linear(32, out_dim))
        self.mu_layer = init_layer_uniform(nn.Linear(32, out_dim))

    def forward(self, state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        x = F.relu(self.hidden1(state))
        x = F.relu(self.hidden2(x))
        mu = self.mu_layer(x).tanh()
        log_std = self.log_std_layer(x).tanh()
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (log_std + 1)
        std = torch.exp(log_std)
        dist = Normal(mu, std)
        z = dist.rsample()
        action = z.tanh()
        log_prob = dist.log_prob(z) - torch.log(1 - action.pow(2) + 1e-7)
        log_prob = log_prob.sum(-1, keepdim=True)
        return action, log_prob


class CriticQ(nn.Module):
    def __init__(self, in_dim: int):
        super().__init__()
        self.hidden1 = nn.Linear(in_dim, 32)
        self.hidden2 = nn.Linear(32, 32)
        self.out = init_layer_uniform(nn.Linear(32, 1))

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        x = torch.cat((state, action), dim=-1)
        x = F.relu(self.hidden1(x))
        x = F.relu(self.hidden2(x))
        return self.out(x)


class CriticV(nn.Module):
    def __init__(self, in_dim: int):
        super().__init__()
        self.hidden1 = nn.Linear(in_dim, 32)
        self.hidden2 = nn.Linear(32, 32)
        self.out = init_layer_uniform(nn.Linear(32, 1))

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.hidden1(state))
        x = F.relu(self.hidden2(x))
        return self.out(x)


class SACAgent:
    def __init__(self, obs_dim: int, action_dim: int, memory_size: int, batch_size: int,
                 gamma: float = 0.99, tau: float = 5e-3, policy_update_freq: int = 2):
        self.memory = ReplayBuffer(obs_dim, memory_size, batch_size)
        self.batch_size, self.gamma, self.tau = batch_size, gamma, tau
        self.policy_update_freq = policy_update_freq
        self.device = torch.device("cpu")

        self.target_entropy = -np.prod((action_dim,)).item()
        self.log_alpha = torch.zeros(1, requires_grad=True, device=self.device)
        self.alpha_optimizer = optim.Adam([self.log_alpha], lr=3e-4)

        self.actor = Actor(obs_dim, action_dim).to(self.device)
        self.vf = CriticV(obs_dim).to(self.device)
        self.vf_target = CriticV(obs_dim).to(self.device)
        self.vf_target.load_state_dict(self.vf.state_dict())
        self.qf_1 = CriticQ(obs_dim + action_dim).to(self.device)
        self.qf_2 = CriticQ(obs_dim + action_dim).to(self.device)

        self.actor_optimizer = optim.Adam(self.actor.parameters(), lr=3e-4)
        self.vf_optimizer = optim.Adam(self.vf.parameters(), lr=3e-4)
        self.qf_1_optimizer = optim.Adam(self.qf_1.parameters(), lr=3e-4)
        self.qf_2_optimizer = optim.Adam(self.qf_2.parameters(), lr=3e-4)
        self.total_step = 0

    def update_model(self) -> Tuple[torch.Tensor, ...]:
        device = self.device
        samples = self.memory.sample_batch()
        state = torch.FloatTensor(samples["obs"]).to(device)
        next_state = torch.FloatTensor(samples["next_obs"]).to(device)
        action = torch.FloatTensor(samples["acts"].reshape(-1, 1)).to(device)
        reward = torch.FloatTensor(samples["rews"].reshape(-1, 1)).to(device)
        done = torch.FloatTensor(samples["done"].reshape(-1, 1)).to(device)
        new_action, log_prob = self.actor(state)

        # train alpha (dual problem)
        alpha_loss = (-self.log_alpha.exp() * (log_prob + self.target_entropy).detach()).mean()
        self.alpha_optimizer.zero_grad()
        alpha_loss.backward()
        self.alpha_optimizer.step()

        alpha = self.log_alpha.exp()  # used for the actor loss calculation

        # q function loss
        mask = 1 - done
        q_1_pred = self.qf_1(state, action)
        q_2_pred = self.qf_2(state, action)
        v_target = self.vf_target(next_state)
        q_target = reward + self.gamma * v_target * mask
        qf_1_loss = F.mse_loss(q_1_pred, q_target.detach())
        qf_2_loss = F.mse_loss(q_2_pred, q_target.detach())

        # v function loss
        v_pred = self.vf(state)
        q_pred = torch.min(self.qf_1(state, new_action), self.qf_2(state, new_action))
        v_target = q_pred - alpha * log_prob
        vf_loss = F.mse_loss(v_pred, v_target.detach())

        # train Q functions
        self.qf_1_optimizer.zero_grad()
        qf_1_loss.backward()

        self.qf_2_optimizer.zero_grad()
        qf_2_loss.backward()

        qf_loss = qf_1_loss + qf_2_loss

        # train V function
        self.vf_optimizer.zero_grad()
        vf_loss.backward()

        if self.total_step % self.policy_update_freq == 0:
            # actor loss
            advantage = q_pred - v_pred.detach()
            actor_loss = (alpha * log_prob - advantage).mean()

            # train actor
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
        else:
            actor_loss = torch.zeros(1)

        # all optimizer steps at the end of update_model (fix from the issue)
        self.qf_1_optimizer.step()
        self.qf_2_optimizer.step()
        self.vf_optimizer.step()
        if self.total_step % self.policy_update_freq == 0:
            # target update (vf)
            self._target_soft_update()

        return actor_loss.data, qf_loss.data, vf_loss.data, alpha_loss.data

    def _target_soft_update(self):
        tau = self.tau
        for t_param, l_param in zip(self.vf_target.parameters(), self.vf.parameters()):
            t_param.data.copy_(tau * l_param.data + (1.0 - tau) * t_param.data)


agent = SACAgent(obs_dim=3, action_dim=1, memory_size=256, batch_size=32)
for agent.total_step in range(1, 5):
    losses = agent.update_model()
    print(agent.total_step, [float(l.mean()) for l in losses])
print("actor mu_layer grad norm:", agent.actor.mu_layer.weight.grad.norm().item())
