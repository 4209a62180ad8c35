"""SAC with automatic entropy tuning in the shape of stable-baselines3's SAC.train()
(https://github.com/DLR-RM/stable-baselines3/blob/master/stable_baselines3/sac/sac.py, with the SACPolicy /
Actor / ContinuousCritic of sac/policies.py, polyak_update of common/utils.py and the
SquashedDiagGaussianDistribution of common/distributions.py written as small stand-ins below), learning on a
tiny deterministic toy env written in the file instead of a gym env.

Suspicious-but-correct patterns kept:
- log_ent_coef is a plain tensor made by torch.log(...).requires_grad_(True) (not an nn.Parameter, in no
  module) with its own Adam optimizer; the loss -(log_ent_coef * (log_prob + target_entropy).detach()) is
  the only thing that trains it;
- ent_coef = torch.exp(log_ent_coef.detach()) is the value used in the actor loss and in the critic target,
  so neither of those losses reaches log_ent_coef (on purpose, softlearning issue #60);
- critic_target built as a separate module, filled by load_state_dict(critic.state_dict()), put in eval
  mode, never in an optimizer; its Bellman target (with the next actions and log-probs from the current
  actor) computed under torch.no_grad();
- the critic shares the actor's (parameter-free) features extractor and runs it under
  torch.set_grad_enabled(False), and its optimizer holds only the parameters not named "features_extractor";
- the actor loss backpropagates through the critic, leaving gradients on the critic's parameters that the
  actor optimizer ignores; critic.optimizer.zero_grad() clears them before the next critic step;
- target update by polyak_update under torch.no_grad() with target.data.mul_ and torch.add(..., out=...);
- losses and the entropy coefficient logged with .item().
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

LOG_STD_MAX, LOG_STD_MIN = 2, -20


class ToyReachEnv:
    """Deterministic toy env: a 1-D arm angle driven towards a fixed target angle."""

    obs_dim, act_dim = 3, 1

    def __init__(self, max_steps=16):
        self.max_steps = max_steps

    def reset(self):
        self.t, self.theta, self.omega = 0, 1.0, 0.0
        return self._obs()

    def _obs(self):
        return torch.tensor([self.theta, self.omega, 0.25 - self.theta])

    def step(self, action):
        self.t += 1
        self.omega = 0.8 * self.omega + 0.2 * float(action[0])
        self.theta = self.theta + 0.1 * self.omega
        reward = -abs(0.25 - self.theta) - 0.01 * float(action[0]) ** 2
        return self._obs(), reward, False, self.t >= self.max_steps


def create_mlp(input_dim, output_dim, net_arch):  # stable_baselines3.common.torch_layers.create_mlp
    modules, last = [], input_dim
    for size in net_arch:
        modules += [nn.Linear(last, size), nn.ReLU()]
        last = size
    if output_dim > 0:
        modules.append(nn.Linear(last, output_dim))
    return modules


class FlattenExtractor(nn.Module):  # stable_baselines3.common.torch_layers.FlattenExtractor
    def __init__(self, features_dim):
        super().__init__()
        self.features_dim = features_dim
        self.flatten = nn.Flatten()

    def forward(self, observations):
        return self.flatten(observations)


def polyak_update(params, target_params, tau):  # stable_baselines3.common.utils.polyak_update
    with torch.no_grad():
        for param, target_param in zip(params, target_params):
            target_param.data.mul_(1 - tau)
            torch.add(target_param.data, param.data, alpha=tau, out=target_param.data)


class Actor(nn.Module):  # stable_baselines3.sac.policies.Actor + SquashedDiagGaussianDistribution
    def __init__(self, features_extractor, action_dim, net_arch=(64, 64)):
        super().__init__()
        self.features_extractor = features_extractor
        self.latent_pi = nn.Sequential(*create_mlp(features_extractor.features_dim, -1, net_arch))
        self.mu = nn.Linear(net_arch[-1], action_dim)
        self.log_std = nn.Linear(net_arch[-1], action_dim)

    def get_action_dist_params(self, obs):
        latent_pi = self.latent_pi(self.features_extractor(obs))
        mean_actions = self.mu(latent_pi)
        log_std = torch.clamp(self.log_std(latent_pi), LOG_STD_MIN, LOG_STD_MAX)
        return mean_actions, log_std

    def action_log_prob(self, obs):
        mean_actions, log_std = self.get_action_dist_params(obs)
        dist = torch.distributions.Normal(mean_actions, log_std.exp())
        gaussian_actions = dist.rsample()
        actions = torch.tanh(gaussian_actions)
        log_prob = dist.log_prob(gaussian_actions).sum(dim=1)
        log_prob -= torch.sum(torch.log(1 - actions ** 2 + 1e-6), dim=1)
        return actions, log_prob

    def forward(self, obs, deterministic=False):
        mean_actions, log_std = self.get_action_dist_params(obs)
        if deterministic:
            return torch.tanh(mean_actions)
        return torch.tanh(torch.distributions.Normal(mean_actions, log_std.exp()).rsample())


class ContinuousCritic(nn.Module):  # stable_baselines3.common.policies.ContinuousCritic
    def __init__(self, features_extractor, action_dim, net_arch=(64, 64), n_critics=2,
                 share_features_extractor=True):
        super().__init__()
        self.features_extractor = features_extractor
        self.share_features_extractor = share_features_extractor
        self.q_networks = []
        for idx in range(n_critics):
            q_net = nn.Sequential(*create_mlp(features_extractor.features_dim + action_dim, 1, net_arch))
            self.add_module(f"qf{idx}", q_net)
            self.q_networks.append(q_net)

    def forward(self, obs, actions):
        # Learn the features extractor using the policy loss only when the features_extractor is shared
        with torch.set_grad_enabled(not self.share_features_extractor):
            features = self.features_extractor(obs)
        qvalue_input = torch.cat([features, actions], dim=1)
        return tuple(q_net(qvalue_input) for q_net in self.q_networks)


class SACPolicy(nn.Module):  # stable_baselines3.sac.policies.SACPolicy._build
    def __init__(self, obs_dim, action_dim, lr=3e-4):
        super().__init__()
        self.actor = Actor(FlattenExtractor(obs_dim), action_dim)
        self.actor.optimizer = torch.optim.Adam(self.actor.parameters(), lr=lr)
        self.critic = ContinuousCritic(self.actor.features_extractor, action_dim)
        critic_parameters = [p for n, p in self.critic.named_parameters() if "features_extractor" not in n]
        self.critic_target = ContinuousCritic(FlattenExtractor(obs_dim), action_dim)
        self.critic_target.load_state_dict(self.critic.state_dict())
        self.critic.optimizer = torch.optim.Adam(critic_parameters, lr=lr)
        self.critic_target.train(False)

    def predict(self, obs):
        with torch.no_grad():
            return self.actor(obs.unsqueeze(0), deterministic=False)[0]


class ReplayBuffer:
    def __init__(self, size, obs_dim, act_dim):
        self.observations = torch.zeros(size, obs_dim)
        self.next_observations = torch.zeros(size, obs_dim)
        self.actions = torch.zeros(size, act_dim)
        self.rewards = torch.zeros(size, 1)
        self.dones = torch.zeros(size, 1)
        self.pos, self.full, self.size = 0, False, size

    def add(self, obs, next_obs, action, reward, done):
        self.observations[self.pos] = obs
        self.next_observations[self.pos] = next_obs
        self.actions[self.pos] = action
        self.rewards[self.pos] = reward
        self.dones[self.pos] = float(done)
        self.pos = (self.pos + 1) % self.size
        self.full = self.full or self.pos == 0

    def sample(self, batch_size):
        idx = torch.randint(0, self.size if self.full else self.pos, (batch_size,))
        return (self.observations[idx], self.actions[idx], self.next_observations[idx],
                self.dones[idx], self.rewards[idx])


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    env = ToyReachEnv()
    policy = SACPolicy(env.obs_dim, env.act_dim)
    actor, critic, critic_target = policy.actor, policy.critic, policy.critic_target
    gamma, tau, batch_size, learning_starts, target_update_interval = 0.99, 0.005, 32, 64, 1

    # ent_coef = "auto": learn log(alpha), init_value 1.0
    target_entropy = float(-env.act_dim)
    log_ent_coef = torch.log(torch.ones(1) * 1.0).requires_grad_(True)
    ent_coef_optimizer = torch.optim.Adam([log_ent_coef], lr=3e-4)
    replay_buffer = ReplayBuffer(1000, env.obs_dim, env.act_dim)

    def train(gradient_steps):
        policy.train(True)
        for gradient_step in range(gradient_steps):
            observations, actions, next_observations, dones, rewards = replay_buffer.sample(batch_size)

            actions_pi, log_prob = actor.action_log_prob(observations)
            log_prob = log_prob.reshape(-1, 1)

            # Important: detach the variable from the graph so we don't change it with other losses
            ent_coef = torch.exp(log_ent_coef.detach())
            ent_coef_loss = -(log_ent_coef * (log_prob + target_entropy).detach()).mean()
            ent_coef_optimizer.zero_grad()
            ent_coef_loss.backward()
            ent_coef_optimizer.step()

            with torch.no_grad():
                next_actions, next_log_prob = actor.action_log_prob(next_observations)
                next_q_values = torch.cat(critic_target(next_observations, next_actions), dim=1)
                next_q_values, _ = torch.min(next_q_values, dim=1, keepdim=True)
                next_q_values = next_q_values - ent_coef * next_log_prob.reshape(-1, 1)
                target_q_values = rewards + (1 - dones) * gamma * next_q_values

            current_q_values = critic(observations, actions)
            critic_loss = 0.5 * sum(F.mse_loss(current_q, target_q_values) for current_q in current_q_values)

            critic.optimizer.zero_grad()
            critic_loss.backward()
            critic.optimizer.step()

            q_values_pi = torch.cat(critic(observations, actions_pi), dim=1)
            min_qf_pi, _ = torch.min(q_values_pi, dim=1, keepdim=True)
            actor_loss = (ent_coef * log_prob - min_qf_pi).mean()

            actor.optimizer.zero_grad()
            actor_loss.backward()
            actor.optimizer.step()

            if gradient_step % target_update_interval == 0:
                polyak_update(critic.parameters(), critic_target.parameters(), tau)
        return critic_loss, actor_loss, ent_coef

    obs = env.reset()
    step = 0
    for num_timesteps in range(learning_starts + 6):
        if num_timesteps < learning_starts:
            action = torch.rand(env.act_dim) * 2 - 1
        else:
            action = policy.predict(obs)
        next_obs, reward, done, timeout = env.step(action)
        replay_buffer.add(obs, next_obs, action, reward, done)
        obs = env.reset() if (done or timeout) else next_obs

        if num_timesteps >= learning_starts:
            critic_loss, actor_loss, ent_coef = train(gradient_steps=1)
            print(f"step {step} loss {critic_loss.item():.6f} actor_loss {actor_loss.item():.6f} "
                  f"ent_coef {ent_coef.item():.6f}")
            step += 1

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"policy": policy.state_dict(), "log_ent_coef": log_ent_coef.detach()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
