"""PPO for continuous actions in the shape of CleanRL's single-file ppo_continuous_action.py,
https://github.com/vwxyzjn/cleanrl/blob/master/cleanrl/ppo_continuous_action.py, with gym's SyncVectorEnv
replaced by a tiny batched toy env written in the file (random start states, deterministic dynamics).

Suspicious-but-correct patterns kept:
- rollout storage tensors (obs/actions/logprobs/values/...) preallocated with torch.zeros and filled in place
  during the rollout; the actions, old log-probs and values come from agent.get_action_and_value under
  torch.no_grad(), so the stored old log-probs / values are constants;
- the GAE advantages and returns computed under torch.no_grad() from the stored values and a bootstrap
  value from agent.get_value;
- several update epochs over the flattened rollout buffer in shuffled minibatches, the ratio
  exp(newlogprob - b_logprobs) against the stored (constant) old log-probs, clipped surrogate;
- value clipping: v_clipped = b_values + clamp(newvalue - b_values, -clip, clip), loss = max of the two;
- actor_logstd is a bare nn.Parameter expanded to the batch (state-independent std) and learns only
  through the log-prob / entropy terms;
- approx_kl and clipfracs computed under torch.no_grad() with .item(); clip_grad_norm_ before the step;
- learning-rate annealing by writing optimizer.param_groups[0]["lr"].
"""
import math
import os

import torch
import torch.nn as nn
from torch.distributions.normal import Normal


class ToyVecEnv:
    """Batched toy env: each env's 3-D state is pushed by a 2-D action; reward = -distance to origin."""

    obs_dim, act_dim = 3, 2

    def __init__(self, num_envs, max_steps=10):
        self.num_envs, self.max_steps = num_envs, max_steps
        self.B = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]]) * 0.2

    def reset(self):
        self.t = torch.zeros(self.num_envs)
        self.state = torch.randn(self.num_envs, self.obs_dim)
        return self.state.clone()

    def step(self, action):
        action = action.clamp(-1, 1)  # gym.wrappers.ClipAction
        self.state = 0.95 * self.state + action @ self.B.T
        reward = -self.state.norm(dim=1)
        self.t += 1
        done = self.t >= self.max_steps
        if done.any():
            self.state[done] = torch.randn(int(done.sum()), self.obs_dim)
            self.t[done] = 0
        return self.state.clone(), reward, done.float()


def layer_init(layer, std=math.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim, act_dim):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 1), std=1.0),
        )
        self.actor_mean = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, 64)), nn.Tanh(),
            layer_init(nn.Linear(64, act_dim), std=0.01),
        )
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        action_mean = self.actor_mean(x)
        action_logstd = self.actor_logstd.expand_as(action_mean)
        action_std = torch.exp(action_logstd)
        probs = Normal(action_mean, action_std)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    num_envs, num_steps, num_iterations = 2, 16, 4
    learning_rate, gamma, gae_lambda = 3e-4, 0.99, 0.95
    num_minibatches, update_epochs, clip_coef = 4, 4, 0.2
    ent_coef, vf_coef, max_grad_norm, target_kl = 0.0, 0.5, 0.5, None
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches

    envs = ToyVecEnv(num_envs)
    agent = Agent(envs.obs_dim, envs.act_dim)
    optimizer = torch.optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)

    obs = torch.zeros((num_steps, num_envs, envs.obs_dim))
    actions = torch.zeros((num_steps, num_envs, envs.act_dim))
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps, num_envs))

    next_obs = envs.reset()
    next_done = torch.zeros(num_envs)
    for iteration in range(1, num_iterations + 1):
        frac = 1.0 - (iteration - 1.0) / num_iterations
        optimizer.param_groups[0]["lr"] = frac * learning_rate

        for step in range(num_steps):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs, reward, next_done = envs.step(action)
            rewards[step] = reward.view(-1)

        # bootstrap value if not done
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                if t == num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1, envs.obs_dim))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1, envs.act_dim))
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        clipfracs = []
        for epoch in range(update_epochs):
            b_inds = torch.randperm(batch_size)
            for start in range(0, batch_size, minibatch_size):
                mb_inds = b_inds[start:start + minibatch_size]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds], -clip_coef, clip_coef)
                v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()

            if target_kl is not None and approx_kl > target_kl:
                break

        print(f"step {iteration - 1} loss {loss.item():.6f} v_loss {v_loss.item():.6f} "
              f"approx_kl {approx_kl.item():.6f} old_kl {old_approx_kl.item():.6f} "
              f"clipfrac {sum(clipfracs) / len(clipfracs):.3f}")

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"agent": agent.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
