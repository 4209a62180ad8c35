"""PPO-Clip in the shape of OpenAI Spinning Up's PyTorch PPO,
https://github.com/openai/spinningup/blob/master/spinup/algos/pytorch/ppo/ppo.py (+ core.py: MLPActorCritic
with an MLPCategoricalActor, PPOBuffer with GAE-Lambda), single process (the mpi_avg / mpi_avg_grads helpers
are identities here), on a tiny deterministic corridor env written in the file instead of a gym env.

Suspicious-but-correct patterns kept:
- ac.step() samples the action and computes the value and the old log-prob under torch.no_grad() and hands
  them back as detached values; the buffer stores them and later rebuilds float tensors with
  torch.as_tensor, so the old log-probs, advantages and returns are constants;
- discount_cumsum / GAE computed outside autograd; advantages normalised in PPOBuffer.get();
- one module with two optimizers over disjoint parts: pi_optimizer holds ac.pi, vf_optimizer holds ac.v,
  with separate loops of train_pi_iters / train_v_iters steps on the same batch;
- the "old" losses computed before the update only for logging, then turned into floats with .item();
- approx_kl, entropy and clip fraction read with .item() inside compute_loss_pi; early stopping on
  approx_kl may break out of the policy loop before the backward (always after at least one step);
- the bootstrap value for a trajectory cut off by the epoch end comes from ac.step (no grad).
"""
import os

import torch
import torch.nn as nn
from torch.distributions.categorical import Categorical


class CorridorEnv:
    """Deterministic corridor of n cells: one-hot position, actions 0=left / 1=right, goal at the right end."""

    def __init__(self, n=6):
        self.n = n
        self.observation_dim, self.action_n = n, 2

    def reset(self):
        self.pos = 0
        return self._obs()

    def _obs(self):
        o = torch.zeros(self.n)
        o[self.pos] = 1.0
        return o

    def step(self, a):
        self.pos = max(0, min(self.n - 1, self.pos + (1 if int(a) == 1 else -1)))
        done = self.pos == self.n - 1
        return self._obs(), (1.0 if done else -0.1), done, {}


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


def discount_cumsum(x, discount):
    """[x0 + d*x1 + d^2*x2, x1 + d*x2, x2] (scipy.signal.lfilter in Spinning Up)."""
    out = torch.zeros_like(x)
    running = 0.0
    for i in reversed(range(len(x))):
        running = x[i] + discount * running
        out[i] = running
    return out


class MLPCategoricalActor(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        self.logits_net = mlp([obs_dim] + list(hidden_sizes) + [act_dim], activation)

    def _distribution(self, obs):
        return Categorical(logits=self.logits_net(obs))

    def _log_prob_from_distribution(self, pi, act):
        return pi.log_prob(act)

    def forward(self, obs, act=None):
        pi = self._distribution(obs)
        logp_a = None
        if act is not None:
            logp_a = self._log_prob_from_distribution(pi, act)
        return pi, logp_a


class MLPCritic(nn.Module):
    def __init__(self, obs_dim, hidden_sizes, activation):
        super().__init__()
        self.v_net = mlp([obs_dim] + list(hidden_sizes) + [1], activation)

    def forward(self, obs):
        return torch.squeeze(self.v_net(obs), -1)  # Critical to ensure v has right shape.


class MLPActorCritic(nn.Module):
    def __init__(self, obs_dim, act_n, hidden_sizes=(32, 32), activation=nn.Tanh):
        super().__init__()
        self.pi = MLPCategoricalActor(obs_dim, act_n, hidden_sizes, activation)
        self.v = MLPCritic(obs_dim, hidden_sizes, activation)

    def step(self, obs):
        with torch.no_grad():
            pi = self.pi._distribution(obs)
            a = pi.sample()
            logp_a = self.pi._log_prob_from_distribution(pi, a)
            v = self.v(obs)
        return a.item(), v.item(), logp_a.item()


class PPOBuffer:
    def __init__(self, obs_dim, size, gamma=0.99, lam=0.95):
        self.obs_buf = torch.zeros(size, obs_dim)
        self.act_buf = torch.zeros(size)
        self.adv_buf = torch.zeros(size)
        self.rew_buf = torch.zeros(size)
        self.ret_buf = torch.zeros(size)
        self.val_buf = torch.zeros(size)
        self.logp_buf = torch.zeros(size)
        self.gamma, self.lam = gamma, lam
        self.ptr, self.path_start_idx, self.max_size = 0, 0, size

    def store(self, obs, act, rew, val, logp):
        assert self.ptr < self.max_size
        self.obs_buf[self.ptr] = obs
        self.act_buf[self.ptr] = act
        self.rew_buf[self.ptr] = rew
        self.val_buf[self.ptr] = val
        self.logp_buf[self.ptr] = logp
        self.ptr += 1

    def finish_path(self, last_val=0.0):
        path_slice = slice(self.path_start_idx, self.ptr)
        rews = torch.cat([self.rew_buf[path_slice], torch.tensor([last_val])])
        vals = torch.cat([self.val_buf[path_slice], torch.tensor([last_val])])
        deltas = rews[:-1] + self.gamma * vals[1:] - vals[:-1]
        self.adv_buf[path_slice] = discount_cumsum(deltas, self.gamma * self.lam)
        self.ret_buf[path_slice] = discount_cumsum(rews, self.gamma)[:-1]
        self.path_start_idx = self.ptr

    def get(self):
        assert self.ptr == self.max_size
        self.ptr, self.path_start_idx = 0, 0
        adv_mean, adv_std = self.adv_buf.mean(), self.adv_buf.std(unbiased=False)
        self.adv_buf = (self.adv_buf - adv_mean) / adv_std
        data = dict(obs=self.obs_buf, act=self.act_buf, ret=self.ret_buf, adv=self.adv_buf, logp=self.logp_buf)
        return {k: torch.as_tensor(v, dtype=torch.float32) for k, v in data.items()}


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    steps_per_epoch, epochs, gamma, lam, clip_ratio = 48, 4, 0.99, 0.97, 0.2
    pi_lr, vf_lr, train_pi_iters, train_v_iters, target_kl, max_ep_len = 3e-4, 1e-3, 10, 10, 0.01, 12

    env = CorridorEnv()
    ac = MLPActorCritic(env.observation_dim, env.action_n)
    buf = PPOBuffer(env.observation_dim, steps_per_epoch, gamma, lam)

    def compute_loss_pi(data):
        obs, act, adv, logp_old = data["obs"], data["act"], data["adv"], data["logp"]
        pi, logp = ac.pi(obs, act)
        ratio = torch.exp(logp - logp_old)
        clip_adv = torch.clamp(ratio, 1 - clip_ratio, 1 + clip_ratio) * adv
        loss_pi = -(torch.min(ratio * adv, clip_adv)).mean()
        approx_kl = (logp_old - logp).mean().item()
        ent = pi.entropy().mean().item()
        clipped = ratio.gt(1 + clip_ratio) | ratio.lt(1 - clip_ratio)
        clipfrac = torch.as_tensor(clipped, dtype=torch.float32).mean().item()
        return loss_pi, dict(kl=approx_kl, ent=ent, cf=clipfrac)

    def compute_loss_v(data):
        obs, ret = data["obs"], data["ret"]
        return ((ac.v(obs) - ret) ** 2).mean()

    pi_optimizer = torch.optim.Adam(ac.pi.parameters(), lr=pi_lr)
    vf_optimizer = torch.optim.Adam(ac.v.parameters(), lr=vf_lr)

    def update():
        data = buf.get()
        pi_l_old, pi_info_old = compute_loss_pi(data)
        pi_l_old = pi_l_old.item()
        v_l_old = compute_loss_v(data).item()

        for i in range(train_pi_iters):
            pi_optimizer.zero_grad()
            loss_pi, pi_info = compute_loss_pi(data)
            kl = pi_info["kl"]  # mpi_avg(...) with a single process
            if kl > 1.5 * target_kl:
                break
            loss_pi.backward()
            pi_optimizer.step()

        for i in range(train_v_iters):
            vf_optimizer.zero_grad()
            loss_v = compute_loss_v(data)
            loss_v.backward()
            vf_optimizer.step()
        return loss_pi, loss_v, pi_l_old, v_l_old, pi_info_old

    o, ep_ret, ep_len = env.reset(), 0.0, 0
    for epoch in range(epochs):
        for t in range(steps_per_epoch):
            a, v, logp = ac.step(o)
            next_o, r, d, _ = env.step(a)
            ep_ret += r
            ep_len += 1
            buf.store(o, a, r, v, logp)
            o = next_o

            timeout = ep_len == max_ep_len
            terminal = d or timeout
            epoch_ended = t == steps_per_epoch - 1
            if terminal or epoch_ended:
                if timeout or epoch_ended:
                    _, v, _ = ac.step(o)
                else:
                    v = 0.0
                buf.finish_path(v)
                o, ep_ret, ep_len = env.reset(), 0.0, 0

        loss_pi, loss_v, pi_l_old, v_l_old, pi_info_old = update()
        loss = loss_pi + loss_v
        print(f"step {epoch} loss {loss.item():.6f} loss_pi_old {pi_l_old:.6f} loss_v_old {v_l_old:.6f} "
              f"entropy {pi_info_old['ent']:.4f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"ac": ac.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
