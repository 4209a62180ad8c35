"""A2C with a shared actor-critic trunk: rollouts collected under no_grad, n-step returns bootstrapped from
a no_grad value, actions re-evaluated with gradient in the update, advantage detached for the policy term.

Source: https://github.com/ikostrikov/pytorch-a2c-ppo-acktr-gail (a2c_ppo_acktr/algo/a2c_acktr.py,
model.py, storage.py, main.py).

Patterns kept (all right):
- `with torch.no_grad(): value, action, action_log_prob = actor_critic.act(...)` while stepping the
  environments: acting needs no graph; the update re-runs `evaluate_actions` on the stored observations.
- `RolloutStorage` is filled with in-place `copy_` into preallocated tensors (observations, actions, old
  values): stored data, never differentiated.
- `next_value = actor_critic.get_value(...).detach()` under no_grad: the bootstrap target is a constant.
- `advantages = returns - values` feeds the value loss with gradient, while
  `action_loss = -(advantages.detach() * action_log_probs).mean()` keeps the critic out of the policy
  gradient; the two heads share the trunk, which receives gradient from both terms.
- `rollouts.after_update()` copies the last observation/mask into slot 0 in place for the next rollout.
- `clip_grad_norm_` before `optimizer.step()`; losses returned with `.item()` for logging.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def init(module, weight_init, bias_init, gain=1.0):
    weight_init(module.weight.data, gain=gain)
    bias_init(module.bias.data)
    return module


class FixedCategorical(torch.distributions.Categorical):
    def sample(self):
        return super().sample().unsqueeze(-1)

    def log_probs(self, actions):
        return super().log_prob(actions.squeeze(-1)).view(actions.size(0), -1).sum(-1).unsqueeze(-1)

    def mode(self):
        return self.probs.argmax(dim=-1, keepdim=True)


class Categorical(nn.Module):
    def __init__(self, num_inputs, num_outputs):
        super().__init__()
        self.linear = init(nn.Linear(num_inputs, num_outputs), nn.init.orthogonal_,
                           lambda x: nn.init.constant_(x, 0), gain=0.01)

    def forward(self, x):
        return FixedCategorical(logits=self.linear(x))


class SharedBase(nn.Module):
    """CNNBase-style: one trunk, a critic_linear head on top of it."""

    def __init__(self, num_inputs, hidden_size=32):
        super().__init__()
        init_ = lambda m: init(m, nn.init.orthogonal_, lambda x: nn.init.constant_(x, 0), nn.init.calculate_gain("relu"))
        self.main = nn.Sequential(init_(nn.Linear(num_inputs, hidden_size)), nn.ReLU(),
                                  init_(nn.Linear(hidden_size, hidden_size)), nn.ReLU())
        self.critic_linear = init(nn.Linear(hidden_size, 1), nn.init.orthogonal_, lambda x: nn.init.constant_(x, 0))

    def forward(self, inputs):
        x = self.main(inputs)
        return self.critic_linear(x), x


class Policy(nn.Module):
    def __init__(self, obs_dim, num_actions):
        super().__init__()
        self.base = SharedBase(obs_dim)
        self.dist = Categorical(32, num_actions)

    def act(self, inputs, deterministic=False):
        value, actor_features = self.base(inputs)
        dist = self.dist(actor_features)
        action = dist.mode() if deterministic else dist.sample()
        return value, action, dist.log_probs(action)

    def get_value(self, inputs):
        value, _ = self.base(inputs)
        return value

    def evaluate_actions(self, inputs, action):
        value, actor_features = self.base(inputs)
        dist = self.dist(actor_features)
        return value, dist.log_probs(action), dist.entropy().mean()


class RolloutStorage(object):
    def __init__(self, num_steps, num_processes, obs_dim):
        self.obs = torch.zeros(num_steps + 1, num_processes, obs_dim)
        self.rewards = torch.zeros(num_steps, num_processes, 1)
        self.value_preds = torch.zeros(num_steps + 1, num_processes, 1)
        self.returns = torch.zeros(num_steps + 1, num_processes, 1)
        self.action_log_probs = torch.zeros(num_steps, num_processes, 1)
        self.actions = torch.zeros(num_steps, num_processes, 1, dtype=torch.long)
        self.masks = torch.ones(num_steps + 1, num_processes, 1)
        self.num_steps = num_steps
        self.step = 0

    def insert(self, obs, actions, action_log_probs, value_preds, rewards, masks):
        self.obs[self.step + 1].copy_(obs)
        self.actions[self.step].copy_(actions)
        self.action_log_probs[self.step].copy_(action_log_probs)
        self.value_preds[self.step].copy_(value_preds)
        self.rewards[self.step].copy_(rewards)
        self.masks[self.step + 1].copy_(masks)
        self.step = (self.step + 1) % self.num_steps

    def after_update(self):
        self.obs[0].copy_(self.obs[-1])
        self.masks[0].copy_(self.masks[-1])

    def compute_returns(self, next_value, gamma):
        self.returns[-1] = next_value
        for step in reversed(range(self.rewards.size(0))):
            self.returns[step] = self.returns[step + 1] * gamma * self.masks[step + 1] + self.rewards[step]


class A2C():
    def __init__(self, actor_critic, value_loss_coef, entropy_coef, lr, eps, alpha, max_grad_norm):
        self.actor_critic = actor_critic
        self.value_loss_coef = value_loss_coef
        self.entropy_coef = entropy_coef
        self.max_grad_norm = max_grad_norm
        self.optimizer = torch.optim.RMSprop(actor_critic.parameters(), lr, eps=eps, alpha=alpha)

    def update(self, rollouts):
        obs_shape = rollouts.obs.size()[2:]
        num_steps, num_processes, _ = rollouts.rewards.size()
        values, action_log_probs, dist_entropy = self.actor_critic.evaluate_actions(
            rollouts.obs[:-1].view(-1, *obs_shape), rollouts.actions.view(-1, 1))
        values = values.view(num_steps, num_processes, 1)
        action_log_probs = action_log_probs.view(num_steps, num_processes, 1)
        advantages = rollouts.returns[:-1] - values
        value_loss = advantages.pow(2).mean()
        action_loss = -(advantages.detach() * action_log_probs).mean()
        self.optimizer.zero_grad()
        (value_loss * self.value_loss_coef + action_loss - dist_entropy * self.entropy_coef).backward()
        nn.utils.clip_grad_norm_(self.actor_critic.parameters(), self.max_grad_norm)
        self.optimizer.step()
        return value_loss.item(), action_loss.item(), dist_entropy.item()


class VecChainEnv:
    """Vectorised toy env: observation is a one-hot position plus noise; action 1 moves right, reward at the end."""

    def __init__(self, num_envs, length=4, seed=0):
        self.n, self.length = num_envs, length
        self.rng = np.random.RandomState(seed)
        self.pos = np.zeros(num_envs, dtype=np.int64)

    def _obs(self):
        o = np.eye(self.length, dtype=np.float32)[self.pos] + 0.05 * self.rng.randn(self.n, self.length).astype(np.float32)
        return torch.from_numpy(o)

    def reset(self):
        self.pos[:] = 0
        return self._obs()

    def step(self, action):
        a = action.squeeze(-1).numpy()
        self.pos = np.clip(self.pos + np.where(a == 1, 1, -1), 0, self.length - 1)
        done = self.pos == self.length - 1
        reward = done.astype(np.float32)
        self.pos[done] = 0
        return self._obs(), torch.from_numpy(reward).unsqueeze(1), done


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_processes, num_steps, num_updates, gamma = 4, 5, 12, 0.99
    envs = VecChainEnv(num_processes)
    actor_critic = Policy(envs.length, 2)
    agent = A2C(actor_critic, value_loss_coef=0.5, entropy_coef=0.01, lr=7e-4 * 10, eps=1e-5, alpha=0.99, max_grad_norm=0.5)
    rollouts = RolloutStorage(num_steps, num_processes, envs.length)
    rollouts.obs[0].copy_(envs.reset())
    for j in range(num_updates):
        for step in range(num_steps):
            with torch.no_grad():
                value, action, action_log_prob = actor_critic.act(rollouts.obs[step])
            obs, reward, done = envs.step(action)
            masks = torch.FloatTensor([[0.0] if done_ else [1.0] for done_ in done])
            rollouts.insert(obs, action, action_log_prob, value, reward, masks)
        with torch.no_grad():
            next_value = actor_critic.get_value(rollouts.obs[-1]).detach()
        rollouts.compute_returns(next_value, gamma)
        value_loss, action_loss, dist_entropy = agent.update(rollouts)
        rollouts.after_update()
        print(f"update {j} value_loss {value_loss:.4f} action_loss {action_loss:.4f} entropy {dist_entropy:.4f} "
              f"reward {rollouts.rewards.sum().item():.0f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"actor_critic": actor_critic.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
