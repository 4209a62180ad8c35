"""Rainbow DQN learner: noisy dueling distributional (C51) network, double-Q target chosen by the online
net, categorical projection of the n-step target distribution onto the fixed support, prioritised-replay
importance weights, target network synchronised with load_state_dict.

Source: https://github.com/Kaixhin/Rainbow (agent.py `learn` / `update_target_net`, model.py NoisyLinear/DQN).

Patterns kept (all right):
- `NoisyLinear` keeps its noise in buffers and `reset_noise()` rewrites them in place with `copy_`; the
  learnable `*_mu` / `*_sigma` parameters get their gradient through `mu + sigma * epsilon`.
- The whole target distribution `m` is built under `torch.no_grad()`: argmax action from the online net
  (double DQN), probabilities from the target net, `floor`/`ceil` indices, in-place index fixes
  `l[...] -= 1`, and two `m.view(-1).index_add_` scatters. It is a constant label, as in the paper.
- `loss = -torch.sum(m * log_ps_a, 1)`: cross-entropy against that constant; only `log_ps_a` carries grad.
- The target net has `requires_grad = False` on all parameters and is in no optimizer; it is refreshed
  with `target_net.load_state_dict(online_net.state_dict())`.
- `mem.update_priorities(idxs, loss.detach().cpu().numpy())`: priorities are bookkeeping.
- Acting uses `with torch.no_grad(): ... .argmax(1).item()`.
"""
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils import clip_grad_norm_


class NoisyLinear(nn.Module):
    def __init__(self, in_features, out_features, std_init=0.5):
        super().__init__()
        self.in_features, self.out_features, self.std_init = in_features, out_features, std_init
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_sigma = nn.Parameter(torch.empty(out_features, in_features))
        self.register_buffer("weight_epsilon", torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.empty(out_features))
        self.bias_sigma = nn.Parameter(torch.empty(out_features))
        self.register_buffer("bias_epsilon", torch.empty(out_features))
        self.reset_parameters()
        self.reset_noise()

    def reset_parameters(self):
        mu_range = 1 / math.sqrt(self.in_features)
        self.weight_mu.data.uniform_(-mu_range, mu_range)
        self.weight_sigma.data.fill_(self.std_init / math.sqrt(self.in_features))
        self.bias_mu.data.uniform_(-mu_range, mu_range)
        self.bias_sigma.data.fill_(self.std_init / math.sqrt(self.out_features))

    def _scale_noise(self, size):
        x = torch.randn(size)
        return x.sign().mul_(x.abs().sqrt_())

    def reset_noise(self):
        epsilon_in = self._scale_noise(self.in_features)
        epsilon_out = self._scale_noise(self.out_features)
        self.weight_epsilon.copy_(torch.outer(epsilon_out, epsilon_in))
        self.bias_epsilon.copy_(epsilon_out)

    def forward(self, input):
        if self.training:
            return F.linear(input, self.weight_mu + self.weight_sigma * self.weight_epsilon,
                            self.bias_mu + self.bias_sigma * self.bias_epsilon)
        return F.linear(input, self.weight_mu, self.bias_mu)


class DQN(nn.Module):
    def __init__(self, obs_dim, action_space, atoms, hidden_size=32, noisy_std=0.1):
        super().__init__()
        self.atoms, self.action_space = atoms, action_space
        self.convs = nn.Sequential(nn.Linear(obs_dim, hidden_size), nn.ReLU())
        self.fc_h_v = NoisyLinear(hidden_size, hidden_size, std_init=noisy_std)
        self.fc_h_a = NoisyLinear(hidden_size, hidden_size, std_init=noisy_std)
        self.fc_z_v = NoisyLinear(hidden_size, self.atoms, std_init=noisy_std)
        self.fc_z_a = NoisyLinear(hidden_size, action_space * self.atoms, std_init=noisy_std)

    def forward(self, x, log=False):
        x = self.convs(x)
        v = self.fc_z_v(F.relu(self.fc_h_v(x)))
        a = self.fc_z_a(F.relu(self.fc_h_a(x)))
        v, a = v.view(-1, 1, self.atoms), a.view(-1, self.action_space, self.atoms)
        q = v + a - a.mean(1, keepdim=True)
        if log:
            return F.log_softmax(q, dim=2)
        return F.softmax(q, dim=2)

    def reset_noise(self):
        for name, module in self.named_children():
            if "fc" in name:
                module.reset_noise()


class PrioritisedMemory:
    """Flat-array stand-in for the segment tree: proportional sampling with importance weights."""

    def __init__(self, states, actions, returns, next_states, nonterminals, alpha=0.5, beta=0.4, seed=0):
        self.s, self.a, self.r, self.ns, self.nt = states, actions, returns, next_states, nonterminals
        self.priorities = np.ones(len(actions))
        self.alpha, self.beta = alpha, beta
        self.rng = np.random.RandomState(seed)

    def sample(self, batch_size):
        probs = self.priorities ** self.alpha
        probs = probs / probs.sum()
        idxs = self.rng.choice(len(probs), batch_size, p=probs)
        weights = (len(probs) * probs[idxs]) ** -self.beta
        weights = torch.tensor(weights / weights.max(), dtype=torch.float32)
        return idxs, self.s[idxs], self.a[idxs], self.r[idxs], self.ns[idxs], self.nt[idxs], weights

    def update_priorities(self, idxs, priorities):
        self.priorities[idxs] = priorities


class Agent():
    def __init__(self, obs_dim, action_space, atoms=11, V_min=-2.0, V_max=2.0, batch_size=16,
                 discount=0.99, multi_step=3, lr=1e-3, adam_eps=1.5e-4, norm_clip=10.0):
        self.action_space, self.atoms, self.Vmin, self.Vmax = action_space, atoms, V_min, V_max
        self.support = torch.linspace(V_min, V_max, atoms)
        self.delta_z = (V_max - V_min) / (atoms - 1)
        self.batch_size, self.n, self.discount, self.norm_clip = batch_size, multi_step, discount, norm_clip
        self.online_net = DQN(obs_dim, action_space, atoms)
        self.online_net.train()
        self.target_net = DQN(obs_dim, action_space, atoms)
        self.update_target_net()
        self.target_net.train()
        for param in self.target_net.parameters():
            param.requires_grad = False
        self.optimiser = torch.optim.Adam(self.online_net.parameters(), lr=lr, eps=adam_eps)

    def reset_noise(self):
        self.online_net.reset_noise()

    def act(self, state):
        with torch.no_grad():
            return (self.online_net(state.unsqueeze(0)) * self.support).sum(2).argmax(1).item()

    def learn(self, mem):
        idxs, states, actions, returns, next_states, nonterminals, weights = mem.sample(self.batch_size)
        log_ps = self.online_net(states, log=True)
        log_ps_a = log_ps[range(self.batch_size), actions]
        with torch.no_grad():
            pns = self.online_net(next_states)
            dns = self.support.expand_as(pns) * pns
            argmax_indices_ns = dns.sum(2).argmax(1)
            self.target_net.reset_noise()
            pns = self.target_net(next_states)
            pns_a = pns[range(self.batch_size), argmax_indices_ns]
            Tz = returns.unsqueeze(1) + nonterminals * (self.discount ** self.n) * self.support.unsqueeze(0)
            Tz = Tz.clamp(min=self.Vmin, max=self.Vmax)
            b = (Tz - self.Vmin) / self.delta_z
            l, u = b.floor().to(torch.int64), b.ceil().to(torch.int64)
            l[(u > 0) * (l == u)] -= 1
            u[(l < (self.atoms - 1)) * (l == u)] += 1
            m = states.new_zeros(self.batch_size, self.atoms)
            offset = torch.linspace(0, ((self.batch_size - 1) * self.atoms), self.batch_size).unsqueeze(1).expand(
                self.batch_size, self.atoms).to(actions)
            m.view(-1).index_add_(0, (l + offset).view(-1), (pns_a * (u.float() - b)).view(-1))
            m.view(-1).index_add_(0, (u + offset).view(-1), (pns_a * (b - l.float())).view(-1))
        loss = -torch.sum(m * log_ps_a, 1)
        self.online_net.zero_grad()
        (weights * loss).mean().backward()
        clip_grad_norm_(self.online_net.parameters(), self.norm_clip)
        self.optimiser.step()
        mem.update_priorities(idxs, loss.detach().cpu().numpy())
        return (weights * loss).mean().item()

    def update_target_net(self):
        self.target_net.load_state_dict(self.online_net.state_dict())


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    obs_dim, n_actions, N = 6, 3, 256
    states = torch.randn(N, obs_dim)
    actions = torch.randint(0, n_actions, (N,))
    returns = (states[:, 0] * (actions == 0) - states[:, 1] * (actions == 1)).clamp(-1, 1)
    next_states = states + 0.1 * torch.randn(N, obs_dim)
    nonterminals = (torch.rand(N, 1) > 0.1).float()
    mem = PrioritisedMemory(states, actions, returns, next_states, nonterminals)
    agent = Agent(obs_dim, n_actions)
    for T in range(12):
        if T % 2 == 0:
            agent.reset_noise()
        print(f"step {T} loss {agent.learn(mem):.4f} act {agent.act(states[0])}")
        if T % 4 == 3:
            agent.update_target_net()
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"online_net": agent.online_net.state_dict(), "target_net": agent.target_net.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
