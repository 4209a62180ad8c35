"""DDPG in the shape of OpenAI Spinning Up's PyTorch implementation,
https://github.com/openai/spinningup/blob/master/spinup/algos/pytorch/ddpg/ddpg.py (+ core.py MLPActorCritic),
with the gym env replaced by random transitions written into the replay buffer during the uniform-random
start_steps phase (the env's reward is a fixed function of state and action).

Suspicious-but-correct patterns kept:
- ac_targ = deepcopy(ac) with every target parameter set to requires_grad = False ("only update via polyak
  averaging"); the Bellman backup through ac_targ computed under torch.no_grad();
- two optimizers over disjoint parts of one module: pi_optimizer holds ac.pi, q_optimizer holds ac.q;
- during the policy step the Q-network is frozen by toggling p.requires_grad = False on ac.q's parameters,
  so loss_pi = -Q(s, pi(s)) gives gradients to pi only; the Q-network is unfrozen right after;
- loss values logged with .item() and Q-values with .detach().numpy()-style reads (.detach() here);
- polyak averaging of the targets in place under torch.no_grad() with p_targ.data.mul_ / .add_;
- actions for the env from ac.act(), which runs the policy under torch.no_grad().
"""
import copy
import os

import torch
import torch.nn as nn


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


class MLPActor(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
        super().__init__()
        self.pi = mlp([obs_dim] + list(hidden_sizes) + [act_dim], activation, nn.Tanh)
        self.act_limit = act_limit

    def forward(self, obs):
        return self.act_limit * self.pi(obs)


class MLPQFunction(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        self.q = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)

    def forward(self, obs, act):
        q = self.q(torch.cat([obs, act], dim=-1))
        return torch.squeeze(q, -1)  # Critical to ensure q has right shape.


class MLPActorCritic(nn.Module):
    def __init__(self, obs_dim, act_dim, act_limit, hidden_sizes=(64, 64), activation=nn.ReLU):
        super().__init__()
        self.pi = MLPActor(obs_dim, act_dim, hidden_sizes, activation, act_limit)
        self.q = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)

    def act(self, obs):
        with torch.no_grad():
            return self.pi(obs)


class ReplayBuffer:
    """A simple FIFO experience replay buffer for DDPG agents."""

    def __init__(self, obs_dim, act_dim, size):
        self.obs_buf = torch.zeros(size, obs_dim)
        self.obs2_buf = torch.zeros(size, obs_dim)
        self.act_buf = torch.zeros(size, act_dim)
        self.rew_buf = torch.zeros(size)
        self.done_buf = torch.zeros(size)
        self.ptr, self.size, self.max_size = 0, 0, size

    def store(self, obs, act, rew, next_obs, done):
        self.obs_buf[self.ptr] = obs
        self.obs2_buf[self.ptr] = next_obs
        self.act_buf[self.ptr] = act
        self.rew_buf[self.ptr] = rew
        self.done_buf[self.ptr] = done
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample_batch(self, batch_size=32):
        idxs = torch.randint(0, self.size, (batch_size,))
        return dict(obs=self.obs_buf[idxs], obs2=self.obs2_buf[idxs], act=self.act_buf[idxs],
                    rew=self.rew_buf[idxs], done=self.done_buf[idxs])


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    obs_dim, act_dim, act_limit = 3, 1, 2.0
    gamma, polyak, pi_lr, q_lr, batch_size = 0.99, 0.995, 1e-3, 1e-3, 32
    start_steps, update_every, act_noise = 64, 2, 0.1

    ac = MLPActorCritic(obs_dim, act_dim, act_limit)
    ac_targ = copy.deepcopy(ac)
    # Freeze target networks with respect to optimizers (only update via polyak averaging)
    for p in ac_targ.parameters():
        p.requires_grad = False
    replay_buffer = ReplayBuffer(obs_dim, act_dim, size=1000)

    def compute_loss_q(data):
        o, a, r, o2, d = data["obs"], data["act"], data["rew"], data["obs2"], data["done"]
        q = ac.q(o, a)
        with torch.no_grad():
            q_pi_targ = ac_targ.q(o2, ac_targ.pi(o2))
            backup = r + gamma * (1 - d) * q_pi_targ
        loss_q = ((q - backup) ** 2).mean()
        loss_info = dict(QVals=q.detach())
        return loss_q, loss_info

    def compute_loss_pi(data):
        o = data["obs"]
        q_pi = ac.q(o, ac.pi(o))
        return -q_pi.mean()

    pi_optimizer = torch.optim.Adam(ac.pi.parameters(), lr=pi_lr)
    q_optimizer = torch.optim.Adam(ac.q.parameters(), lr=q_lr)
    logs = []

    def update(data):
        q_optimizer.zero_grad()
        loss_q, loss_info = compute_loss_q(data)
        loss_q.backward()
        q_optimizer.step()

        # Freeze Q-network so you don't waste computational effort computing gradients for it
        for p in ac.q.parameters():
            p.requires_grad = False

        pi_optimizer.zero_grad()
        loss_pi = compute_loss_pi(data)
        loss_pi.backward()
        pi_optimizer.step()

        # Unfreeze Q-network so you can optimize it at next DDPG step.
        for p in ac.q.parameters():
            p.requires_grad = True

        logs.append(dict(LossQ=loss_q.item(), LossPi=loss_pi.item(), QMean=loss_info["QVals"].mean().item()))

        # Finally, update target networks by polyak averaging.
        with torch.no_grad():
            for p, p_targ in zip(ac.parameters(), ac_targ.parameters()):
                p_targ.data.mul_(polyak)
                p_targ.data.add_((1 - polyak) * p.data)
        return loss_q

    def env_step(o, a):
        # random-transition stand-in for the gym env: next state drawn at random, reward fixed by (o, a)
        o2 = torch.randn(obs_dim)
        r = -(o.pow(2).sum() + 0.1 * a.pow(2).sum()).item()
        return o2, r, False

    o = torch.randn(obs_dim)
    step = 0
    for t in range(start_steps + 2 * update_every):
        if t > start_steps:
            a = (ac.act(o) + act_noise * torch.randn(act_dim)).clamp(-act_limit, act_limit)
        else:
            a = (torch.rand(act_dim) * 2 - 1) * act_limit
        o2, r, d = env_step(o, a)
        replay_buffer.store(o, a, r, o2, d)
        o = o2

        if t >= start_steps and t % update_every == 0:
            for _ in range(update_every):
                batch = replay_buffer.sample_batch(batch_size)
                loss = update(data=batch)
                print(f"step {step} loss {loss.item():.6f}")
                step += 1

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"ac": ac.state_dict(), "ac_targ": ac_targ.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
