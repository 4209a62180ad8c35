"""kashif/firedup issue #11 "ddpg torch error", https://github.com/kashif/firedup/issues/11: in fireup/algos/ddpg/ddpg.py
one forward pass `_, q, q_pi = main(obs1, acts)` builds both losses (q_pi = main.q(cat(x, main.policy(x)))), then the
loop runs the Q-learning update (q_loss.backward(); q_optimizer.step()) before the policy update. pi_loss's graph
saved main.q's weights (its backward goes through the critic into the policy), q_optimizer.step() (Adam) has written
those weights in place, so pi_loss.backward() raises "one of the variables needed for gradient computation has been
modified by an inplace operation: [torch.FloatTensor [300, 1]], which is output 0 of TBackward, is at version 2;
expected version 1 instead" on PyTorch >= 1.5 (older versions silently used the stepped critic). The reporter
"reordered the two gradient updates and it worked"; the maintainer fixed it the same way.
Fix: run the policy update (pi_optimizer.zero_grad(); pi_loss.backward(); pi_optimizer.step()) before the Q-learning
update; q_optimizer.zero_grad() then clears what pi_loss left in the critic's .grad. core.ActorCritic/MLP are the
repo's own (shortened), gym's Box env and the EpochLogger are small stand-ins."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


# --- fireup/algos/ddpg/core.py ------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, layers, activation=torch.tanh, output_activation=None, output_scale=1,
                 output_squeeze=False):
        super(MLP, self).__init__()
        self.layers = nn.ModuleList()
        self.activation = activation
        self.output_activation = output_activation
        self.output_scale = output_scale
        self.output_squeeze = output_squeeze
        for i, layer in enumerate(layers[1:]):
            self.layers.append(nn.Linear(layers[i], layer))
            nn.init.zeros_(self.layers[i].bias)

    def forward(self, inputs):
        x = inputs
        for layer in self.layers[:-1]:
            x = self.activation(layer(x))
        if self.output_activation is None:
            x = self.layers[-1](x) * self.output_scale
        else:
            x = self.output_activation(self.layers[-1](x)) * self.output_scale
        return x.squeeze() if self.output_squeeze else x


class ActorCritic(nn.Module):
    def __init__(self, in_features, action_space, hidden_sizes=(400, 300), activation=torch.relu,
                 output_activation=torch.tanh):
        super(ActorCritic, self).__init__()
        action_dim = action_space.shape[0]
        action_scale = action_space.high[0]
        self.policy = MLP(layers=[in_features] + list(hidden_sizes) + [action_dim], activation=activation,
                          output_activation=output_activation, output_scale=action_scale)
        self.q = MLP(layers=[in_features + action_dim] + list(hidden_sizes) + [1], activation=activation,
                     output_squeeze=True)

    def forward(self, x, a):
        pi = self.policy(x)
        q = self.q(torch.cat((x, a), dim=1))
        q_pi = self.q(torch.cat((x, pi), dim=1))
        return pi, q, q_pi


# --- gym Box / env and EpochLogger stand-ins ----------------------------------------------------
class Box:
    def __init__(self, low, high, shape):
        self.low, self.high, self.shape = np.full(shape, low, np.float32), np.full(shape, high, np.float32), shape

    def sample(self):
        return np.random.uniform(self.low, self.high).astype(np.float32)


class PointEnv:
    observation_space = Box(-np.inf, np.inf, (3,))
    action_space = Box(-1.0, 1.0, (1,))

    def reset(self):
        self.s = np.random.randn(3).astype(np.float32)
        return self.s

    def step(self, a):
        r = -float(np.sum(self.s ** 2)) - 0.1 * float(np.sum(a ** 2))
        self.s = (0.9 * self.s + 0.1 * np.concatenate([a, a, a])).astype(np.float32)
        return self.s, r, False, {}


class EpochLogger:
    def __init__(self):
        self.epoch_dict = {}

    def store(self, **kwargs):
        for k, v in kwargs.items():
            self.epoch_dict.setdefault(k, []).append(v)


# --- fireup/algos/ddpg/ddpg.py --------------------------------------------------------------------
class ReplayBuffer:
    def __init__(self, obs_dim, act_dim, size):
        self.obs1_buf = np.zeros([size, obs_dim], dtype=np.float32)
        self.obs2_buf = np.zeros([size, obs_dim], dtype=np.float32)
        self.acts_buf = np.zeros([size, act_dim], dtype=np.float32)
        self.rews_buf = np.zeros(size, dtype=np.float32)
        self.done_buf = np.zeros(size, dtype=np.float32)
        self.ptr, self.size, self.max_size = 0, 0, size

    def store(self, obs, act, rew, next_obs, done):
        self.obs1_buf[self.ptr] = obs
        self.obs2_buf[self.ptr] = next_obs
        self.acts_buf[self.ptr] = act
        self.rews_buf[self.ptr] = rew
        self.done_buf[self.ptr] = done
        self.ptr = (self.ptr + 1) % self.max_size
        self.size = min(self.size + 1, self.max_size)

    def sample_batch(self, batch_size=32):
        idxs = np.random.randint(0, self.size, size=batch_size)
        return dict(obs1=self.obs1_buf[idxs], obs2=self.obs2_buf[idxs], acts=self.acts_buf[idxs],
                    rews=self.rews_buf[idxs], done=self.done_buf[idxs])


def ddpg(env_fn, actor_critic=ActorCritic, ac_kwargs=dict(), seed=0, total_steps=20, replay_size=1000,
         gamma=0.99, polyak=0.995, pi_lr=1e-3, q_lr=1e-3, batch_size=16, start_steps=10, act_noise=0.1,
         max_ep_len=10):
    logger = EpochLogger()
    torch.manual_seed(seed)
    np.random.seed(seed)

    env = env_fn()
    obs_dim = env.observation_space.shape[0]
    act_dim = env.action_space.shape[0]
    act_limit = env.action_space.high[0]
    ac_kwargs["action_space"] = env.action_space

    main = actor_critic(in_features=obs_dim, **ac_kwargs)
    target = actor_critic(in_features=obs_dim, **ac_kwargs)
    target.eval()
    replay_buffer = ReplayBuffer(obs_dim=obs_dim, act_dim=act_dim, size=replay_size)

    # Separate train ops for pi, q
    pi_optimizer = torch.optim.Adam(main.policy.parameters(), lr=pi_lr)
    q_optimizer = torch.optim.Adam(main.q.parameters(), lr=q_lr)
    target.load_state_dict(main.state_dict())
    pi_before = [p.detach().clone() for p in main.policy.parameters()]

    def get_action(o, noise_scale):
        pi = main.policy(torch.Tensor(o.reshape(1, -1)))
        a = pi.detach().numpy()[0] + noise_scale * np.random.randn(act_dim)
        return np.clip(a, -act_limit, act_limit)

    o, r, d, ep_ret, ep_len = env.reset(), 0, False, 0, 0
    for t in range(total_steps):
        main.eval()
        if t > start_steps:
            a = get_action(o, act_noise)
        else:
            a = env.action_space.sample()
        o2, r, d, _ = env.step(a)
        ep_ret += r
        ep_len += 1
        d = False if ep_len == max_ep_len else d
        replay_buffer.store(o, a, r, o2, d)
        o = o2

        if d or (ep_len == max_ep_len):
            main.train()
            for _ in range(ep_len):
                batch = replay_buffer.sample_batch(batch_size)
                (obs1, obs2, acts, rews, done) = (
                    torch.Tensor(batch["obs1"]),
                    torch.Tensor(batch["obs2"]),
                    torch.Tensor(batch["acts"]),
                    torch.Tensor(batch["rews"]),
                    torch.Tensor(batch["done"]),
                )
                _, q, q_pi = main(obs1, acts)
                _, _, q_pi_targ = target(obs2, acts)

                # Bellman backup for Q function
                backup = (rews + gamma * (1 - done) * q_pi_targ).detach()

                # DDPG losses
                pi_loss = -q_pi.mean()
                q_loss = F.mse_loss(q, backup)

                # Q-learning update
                q_optimizer.zero_grad()
                q_loss.backward()
                q_optimizer.step()  # <- inplace_saved
                logger.store(LossQ=q_loss, QVals=q.data.numpy())

                # Policy update
                pi_optimizer.zero_grad()
                pi_loss.backward()
                pi_optimizer.step()
                logger.store(LossPi=pi_loss)

                # Polyak averaging for target parameters
                for p_main, p_target in zip(main.parameters(), target.parameters()):
                    p_target.data.copy_(polyak * p_target.data + (1 - polyak) * p_main.data)

            logger.store(EpRet=ep_ret, EpLen=ep_len)
            print("episode return %.2f, LossQ %.4f, LossPi %.4f"
                  % (ep_ret, logger.epoch_dict["LossQ"][-1].item(), logger.epoch_dict["LossPi"][-1].item()))
            o, r, d, ep_ret, ep_len = env.reset(), 0, False, 0, 0

    print("policy changed:", any(not torch.equal(b, p) for b, p in zip(pi_before, main.policy.parameters())))
    return main


ddpg(lambda: PointEnv(), actor_critic=ActorCritic, ac_kwargs=dict(hidden_sizes=[32]))
