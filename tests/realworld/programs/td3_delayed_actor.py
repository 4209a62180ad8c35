"""TD3 in the shape of the authors' reference implementation, sfujim/TD3 (TD3.py + main.py),
https://github.com/sfujim/TD3/blob/master/TD3.py, driven by a tiny deterministic point-mass env written
in the file instead of a gym/MuJoCo env.

Suspicious-but-correct patterns kept:
- actor_target / critic_target made by copy.deepcopy and never given to an optimizer; their parameters
  keep requires_grad=True (as in the reference) but are only ever read under torch.no_grad();
- target policy smoothing noise and the clipped double-Q target computed under torch.no_grad();
- twin critics in one module (Q1 and Q2 heads), critic loss = mse(Q1) + mse(Q2);
- DELAYED policy updates (policy_freq=2): on those steps the actor loss -critic.Q1(s, actor(s)) is
  backpropagated through the critic too, so the critic's parameters receive gradients that the actor
  optimizer ignores; they are cleared by critic_optimizer.zero_grad() before the next critic step;
- the target networks are updated by polyak averaging with target_param.data.copy_(...) only on the
  delayed steps;
- actions for the env picked with actor(state).cpu().data.numpy()-style detached reads (.detach() here).
"""
import copy
import os

import torch
import torch.nn as nn
import torch.nn.functional as F


class PointMassEnv:
    """Deterministic toy env: a 2-D point pushed by a bounded force towards the origin."""

    state_dim, action_dim, max_action = 4, 2, 1.0

    def __init__(self, max_steps=20):
        self.max_steps = max_steps

    def reset(self, gen):
        self.t = 0
        self.pos = torch.rand(2, generator=gen) * 2 - 1
        self.vel = torch.zeros(2)
        return torch.cat([self.pos, self.vel])

    def step(self, action):
        self.t += 1
        self.vel = 0.9 * self.vel + 0.1 * action
        self.pos = (self.pos + 0.1 * self.vel).clamp(-2, 2)
        reward = -(self.pos.pow(2).sum() + 0.01 * action.pow(2).sum()).item()
        done = bool(self.pos.norm() < 0.05)
        return torch.cat([self.pos, self.vel]), reward, done, self.t >= self.max_steps


class ReplayBuffer:
    def __init__(self, state_dim, action_dim, max_size=10000):
        self.max_size, self.ptr, self.size = max_size, 0, 0
        self.state = torch.zeros(max_size, state_dim)
        self.action = torch.zeros(max_size, action_dim)
        self.next_state = torch.zeros(max_size, state_dim)
        self.reward = torch.zeros(max_size, 1)
        self.not_done = torch.zeros(max_size, 1)

    def add(self, state, action, next_state, reward, done):
        self.state[self.ptr] = state
        self.action[self.ptr] = action
        self.next_state[self.ptr] = next_state
        self.reward[self.ptr] = reward
        self.not_done[self.ptr] = 1.0 - float(done)
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample(self, batch_size):
        ind = torch.randint(0, self.size, (batch_size,))
        return self.state[ind], self.action[ind], self.next_state[ind], self.reward[ind], self.not_done[ind]


class Actor(nn.Module):
    def __init__(self, state_dim, action_dim, max_action):
        super().__init__()
        self.l1 = nn.Linear(state_dim, 64)
        self.l2 = nn.Linear(64, 64)
        self.l3 = nn.Linear(64, action_dim)
        self.max_action = max_action

    def forward(self, state):
        a = F.relu(self.l1(state))
        a = F.relu(self.l2(a))
        return self.max_action * torch.tanh(self.l3(a))


class Critic(nn.Module):
    def __init__(self, state_dim, action_dim):
        super().__init__()
        # Q1 architecture
        self.l1 = nn.Linear(state_dim + action_dim, 64)
        self.l2 = nn.Linear(64, 64)
        self.l3 = nn.Linear(64, 1)
        # Q2 architecture
        self.l4 = nn.Linear(state_dim + action_dim, 64)
        self.l5 = nn.Linear(64, 64)
        self.l6 = nn.Linear(64, 1)

    def forward(self, state, action):
        sa = torch.cat([state, action], 1)
        q1 = self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))
        q2 = self.l6(F.relu(self.l5(F.relu(self.l4(sa)))))
        return q1, q2

    def Q1(self, state, action):
        sa = torch.cat([state, action], 1)
        return self.l3(F.relu(self.l2(F.relu(self.l1(sa)))))


class TD3:
    def __init__(self, state_dim, action_dim, max_action, discount=0.99, tau=0.005,
                 policy_noise=0.2, noise_clip=0.5, policy_freq=2):
        self.actor = Actor(state_dim, action_dim, max_action)
        self.actor_target = copy.deepcopy(self.actor)
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=3e-4)

        self.critic = Critic(state_dim, action_dim)
        self.critic_target = copy.deepcopy(self.critic)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=3e-4)

        self.max_action = max_action
        self.discount = discount
        self.tau = tau
        self.policy_noise = policy_noise
        self.noise_clip = noise_clip
        self.policy_freq = policy_freq
        self.total_it = 0

    def select_action(self, state):
        return self.actor(state.reshape(1, -1)).detach().flatten()

    def train(self, replay_buffer, batch_size=32):
        self.total_it += 1
        state, action, next_state, reward, not_done = replay_buffer.sample(batch_size)

        with torch.no_grad():
            # Select action according to policy and add clipped noise
            noise = (torch.randn_like(action) * self.policy_noise).clamp(-self.noise_clip, self.noise_clip)
            next_action = (self.actor_target(next_state) + noise).clamp(-self.max_action, self.max_action)
            # Compute the target Q value
            target_Q1, target_Q2 = self.critic_target(next_state, next_action)
            target_Q = torch.min(target_Q1, target_Q2)
            target_Q = reward + not_done * self.discount * target_Q

        current_Q1, current_Q2 = self.critic(state, action)
        critic_loss = F.mse_loss(current_Q1, target_Q) + F.mse_loss(current_Q2, target_Q)

        # Optimize the critic (zero_grad also clears what the last actor backward left in the critic)
        self.critic_optimizer.zero_grad()
        critic_loss.backward()
        self.critic_optimizer.step()

        # Delayed policy updates
        if self.total_it % self.policy_freq == 0:
            actor_loss = -self.critic.Q1(state, self.actor(state)).mean()

            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()

            # Update the frozen target models
            for param, target_param in zip(self.critic.parameters(), self.critic_target.parameters()):
                target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
            for param, target_param in zip(self.actor.parameters(), self.actor_target.parameters()):
                target_param.data.copy_(self.tau * param.data + (1 - self.tau) * target_param.data)
        return critic_loss


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    env = PointMassEnv()
    policy = TD3(env.state_dim, env.action_dim, env.max_action)
    replay_buffer = ReplayBuffer(env.state_dim, env.action_dim)
    start_timesteps, expl_noise = 64, 0.1

    state = env.reset(gen)
    step = 0
    for t in range(start_timesteps + 8):
        if t < start_timesteps:
            action = torch.rand(env.action_dim) * 2 * env.max_action - env.max_action
        else:
            action = (policy.select_action(state)
                      + torch.randn(env.action_dim) * env.max_action * expl_noise
                      ).clamp(-env.max_action, env.max_action)
        next_state, reward, done, timeout = env.step(action)
        replay_buffer.add(state, action, next_state, reward, done)
        state = next_state
        if done or timeout:
            state = env.reset(gen)

        if t >= start_timesteps:
            loss = policy.train(replay_buffer)
            print(f"step {step} loss {loss.item():.6f}")
            step += 1

    if os.environ.get("REALWORLD_STATE"):
        torch.save({"actor": policy.actor.state_dict(), "actor_target": policy.actor_target.state_dict(),
                    "critic": policy.critic.state_dict(), "critic_target": policy.critic_target.state_dict()},
                   os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
