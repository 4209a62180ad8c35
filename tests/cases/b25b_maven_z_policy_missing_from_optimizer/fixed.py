"""starry-sky6688/MARL-Algorithms (formerly starry-sky6688/StarCraft) issue #32 "Is z_policy updated properly?",
https://github.com/starry-sky6688/MARL-Algorithms/issues/32: in policy/maven.py the MAVEN learner builds
self.eval_parameters (the RMSprop optimizer's list, also the list it clips) from eval_qmix_net, eval_rnn and mi_net only.
The hierarchical latent policy z_policy is trained by rl_loss, which is part of the summed loss, so loss.backward()
fills z_policy's .grad at every step, but no optimizer holds those parameters: z_policy never changes and the
latent-space exploration policy stays at its random initialisation. The maintainer confirmed ("I forgot the
z_policy's parameters") and fixed it.
Fix: put list(self.z_policy.parameters()) into self.eval_parameters. The networks of network/maven_net.py and
network/qmix_net.py (HierarchicalPolicy, BootstrappedRNN, VarDistribution, QMixNet) are small stand-ins and the
episode batch is random; the SMAC runner is left out."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as f

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(1)


# --- network/maven_net.py, network/qmix_net.py stand-ins --------------------------------------
class HierarchicalPolicy(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.fc_1 = nn.Linear(args.state_shape, 32)
        self.fc_2 = nn.Linear(32, args.noise_dim)

    def forward(self, state):
        return f.softmax(self.fc_2(f.relu(self.fc_1(state))), dim=-1)


class BootstrappedRNN(nn.Module):
    def __init__(self, input_shape, args):
        super().__init__()
        self.args = args
        self.fc = nn.Linear(input_shape, args.rnn_hidden_dim)
        self.rnn = nn.GRUCell(args.rnn_hidden_dim, args.rnn_hidden_dim)
        self.hyper_w = nn.Linear(args.noise_dim, args.rnn_hidden_dim * args.n_actions)

    def forward(self, obs, hidden_state, z):
        x = f.relu(self.fc(obs))
        h = self.rnn(x, hidden_state.reshape(-1, self.args.rnn_hidden_dim))
        w = self.hyper_w(z).view(-1, self.args.rnn_hidden_dim, self.args.n_actions)
        q = torch.bmm(h.unsqueeze(1), w).squeeze(1)
        return q, h


class VarDistribution(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.fc = nn.Linear(args.n_agents * args.n_actions + args.state_shape, args.noise_dim)

    def forward(self, q_value, avail_actions, state, episode_len):
        feats = []
        for i in range(q_value.shape[0]):
            length = int(episode_len[i])
            q = f.softmax(q_value[i, :length], dim=-1) * avail_actions[i, :length]
            q = q / q.sum(dim=-1, keepdim=True)
            feats.append(torch.cat([q.reshape(length, -1), state[i, :length]], dim=-1).mean(dim=0))
        return self.fc(torch.stack(feats))


class QMixNet(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.hyper_w1 = nn.Linear(args.state_shape, args.n_agents * args.qmix_hidden_dim)
        self.hyper_b1 = nn.Linear(args.state_shape, args.qmix_hidden_dim)
        self.hyper_w2 = nn.Linear(args.state_shape, args.qmix_hidden_dim)
        self.hyper_b2 = nn.Linear(args.state_shape, 1)

    def forward(self, q_values, states):
        episode_num = q_values.size(0)
        q_values = q_values.view(-1, 1, self.args.n_agents)
        states = states.reshape(-1, self.args.state_shape)
        w1 = torch.abs(self.hyper_w1(states)).view(-1, self.args.n_agents, self.args.qmix_hidden_dim)
        b1 = self.hyper_b1(states).view(-1, 1, self.args.qmix_hidden_dim)
        hidden = f.elu(torch.bmm(q_values, w1) + b1)
        w2 = torch.abs(self.hyper_w2(states)).view(-1, self.args.qmix_hidden_dim, 1)
        b2 = self.hyper_b2(states).view(-1, 1, 1)
        return (torch.bmm(hidden, w2) + b2).view(episode_num, -1, 1)


# --- policy/maven.py ----------------------------------------------------------------------------
class MAVEN:
    def __init__(self, args):
        self.n_actions = args.n_actions
        self.n_agents = args.n_agents
        self.state_shape = args.state_shape
        self.obs_shape = args.obs_shape
        input_shape = self.obs_shape
        if args.last_action:
            input_shape += self.n_actions
        if args.reuse_network:
            input_shape += self.n_agents

        # network
        self.z_policy = HierarchicalPolicy(args)  # choose z
        self.eval_rnn = BootstrappedRNN(input_shape, args)  # choose action for each agent
        self.target_rnn = BootstrappedRNN(input_shape, args)
        self.eval_qmix_net = QMixNet(args)  # mix the q value
        self.target_qmix_net = QMixNet(args)
        self.mi_net = VarDistribution(args)  # get q(z|sigma(tau))
        self.args = args

        self.target_rnn.load_state_dict(self.eval_rnn.state_dict())
        self.target_qmix_net.load_state_dict(self.eval_qmix_net.state_dict())

        self.eval_parameters = list(self.z_policy.parameters()) + list(self.eval_qmix_net.parameters()) + list(self.eval_rnn.parameters())  + list(self.mi_net.parameters())
        if args.optimizer == "RMS":
            self.optimizer = torch.optim.RMSprop(self.eval_parameters, lr=args.lr)
        self.eval_hidden = None
        self.target_hidden = None

    def learn(self, batch, max_episode_len, train_step, epsilon=None):
        episode_num = batch['o'].shape[0]
        self.init_hidden(episode_num)
        for key in batch.keys():
            if key == 'u':
                batch[key] = torch.tensor(batch[key], dtype=torch.long)
            else:
                batch[key] = torch.tensor(batch[key], dtype=torch.float32)
        s, s_next, u, r, avail_u, avail_u_next, terminated, z = batch['s'], batch['s_next'], batch['u'], batch['r'],  \
                                                                batch['avail_u'], batch['avail_u_next'],\
                                                                batch['terminated'],   batch['z']
        mask = 1 - batch["padded"].float()
        q_evals, q_targets = self.get_q_values(batch, max_episode_len)

        # -------------------------------------------------RL Loss------------------------------------------------------
        z_prob = self.z_policy(s[:, 0, :])
        log_z_prob = torch.log(z_prob)
        entropy = -(z_prob * log_z_prob).sum(dim=-1).detach()
        class_z = z.long().argmax(dim=-1, keepdim=True)  # transform onehot vector to int
        z_prob_taken = torch.gather(z_prob, index=class_z, dim=-1).squeeze(-1)
        z_returns = r.sum(dim=1)
        rl_loss = - (z_prob_taken * (z_returns + self.args.entropy_coefficient * entropy)).mean()

        # -------------------------------------------------MI Loss------------------------------------------------------
        episode_length = []
        for episode_idx in range(episode_num):
            for transition_idx in range(self.args.episode_limit):
                if terminated[episode_idx, transition_idx, 0] == 1:
                    episode_length.append(transition_idx + 1)
                    break
        episode_len = torch.tensor(episode_length, dtype=torch.long)
        mi_prob = self.mi_net(q_evals.clone(), avail_u, s, episode_len)  # (episode_num, args.noise_dim)
        class_z = class_z.squeeze(-1)
        mi_loss = f.cross_entropy(mi_prob, class_z)

        # -------------------------------------------------QL Loss------------------------------------------------------
        q_evals = torch.gather(q_evals, dim=3, index=u).squeeze(3)
        q_targets[avail_u_next == 0.0] = - 9999999
        q_targets = q_targets.max(dim=3)[0]
        q_total_eval = self.eval_qmix_net(q_evals, s)
        q_total_target = self.target_qmix_net(q_targets, s_next)
        targets = r + self.args.gamma * q_total_target * (1 - terminated)
        td_error = (q_total_eval - targets.detach())
        masked_td_error = mask * td_error
        ql_loss = (masked_td_error ** 2).sum() / mask.sum()

        loss = rl_loss + self.args.lambda_mi * mi_loss + self.args.lambda_ql * ql_loss
        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.eval_parameters, self.args.grad_norm_clip)
        self.optimizer.step()

        if train_step > 0 and train_step % self.args.target_update_cycle == 0:
            self.target_rnn.load_state_dict(self.eval_rnn.state_dict())
            self.target_qmix_net.load_state_dict(self.eval_qmix_net.state_dict())

    def _get_inputs(self, batch, transition_idx):
        obs, obs_next, u_onehot = batch['o'][:, transition_idx], \
                                  batch['o_next'][:, transition_idx], batch['u_onehot'][:]
        episode_num = obs.shape[0]
        inputs, inputs_next = [], []
        inputs.append(obs)
        inputs_next.append(obs_next)
        if self.args.last_action:
            if transition_idx == 0:
                inputs.append(torch.zeros_like(u_onehot[:, transition_idx]))
            else:
                inputs.append(u_onehot[:, transition_idx - 1])
            inputs_next.append(u_onehot[:, transition_idx])
        if self.args.reuse_network:
            inputs.append(torch.eye(self.args.n_agents).unsqueeze(0).expand(episode_num, -1, -1))
            inputs_next.append(torch.eye(self.args.n_agents).unsqueeze(0).expand(episode_num, -1, -1))
        inputs = torch.cat([x.reshape(episode_num * self.args.n_agents, -1) for x in inputs], dim=1)
        inputs_next = torch.cat([x.reshape(episode_num * self.args.n_agents, -1) for x in inputs_next], dim=1)
        return inputs, inputs_next

    def get_q_values(self, batch, max_episode_len):
        episode_num = batch['o'].shape[0]
        z = batch['z'].repeat(self.n_agents, 1)  # each episode has one z
        q_evals, q_targets = [], []
        for transition_idx in range(max_episode_len):
            inputs, inputs_next = self._get_inputs(batch, transition_idx)
            q_eval, self.eval_hidden = self.eval_rnn(inputs, self.eval_hidden, z)
            q_target, self.target_hidden = self.target_rnn(inputs_next, self.target_hidden, z)
            q_eval = q_eval.view(episode_num, self.n_agents, -1)
            q_target = q_target.view(episode_num, self.n_agents, -1)
            q_evals.append(q_eval)
            q_targets.append(q_target)
        q_evals = torch.stack(q_evals, dim=1)
        q_targets = torch.stack(q_targets, dim=1)
        return q_evals, q_targets

    def init_hidden(self, episode_num):
        self.eval_hidden = torch.zeros((episode_num, self.n_agents, self.args.rnn_hidden_dim))
        self.target_hidden = torch.zeros((episode_num, self.n_agents, self.args.rnn_hidden_dim))


# --- the runner, in short: random episode batches in the buffer's layout ---------------------
class Args:
    n_actions, n_agents, state_shape, obs_shape, noise_dim = 4, 3, 8, 6, 2
    rnn_hidden_dim, qmix_hidden_dim, episode_limit = 16, 8, 5
    last_action, reuse_network, optimizer, lr = True, True, "RMS", 5e-4
    gamma, entropy_coefficient, lambda_mi, lambda_ql = 0.99, 0.001, 0.001, 1.0
    grad_norm_clip, target_update_cycle = 10, 2


def sample_batch(args, episode_num=4):
    T, A, N = args.episode_limit, args.n_agents, args.n_actions
    u = np.random.randint(0, N, size=(episode_num, T, A, 1))
    terminated = np.zeros((episode_num, T, 1))
    padded = np.zeros((episode_num, T, 1))
    for i, length in enumerate(np.random.randint(3, T + 1, size=episode_num)):
        terminated[i, length - 1, 0] = 1
        padded[i, length:, 0] = 1
    z = np.eye(args.noise_dim)[np.random.randint(0, args.noise_dim, size=episode_num)]
    return {'o': np.random.randn(episode_num, T, A, args.obs_shape), 'o_next': np.random.randn(episode_num, T, A, args.obs_shape),
            's': np.random.randn(episode_num, T, args.state_shape), 's_next': np.random.randn(episode_num, T, args.state_shape),
            'u': u, 'u_onehot': np.eye(N)[u[..., 0]], 'r': np.random.randn(episode_num, T, 1),
            'avail_u': np.ones((episode_num, T, A, N)), 'avail_u_next': np.ones((episode_num, T, A, N)),
            'terminated': terminated, 'padded': padded, 'z': z}


args = Args()
maven = MAVEN(args)
z_policy_before = maven.z_policy.fc_1.weight.detach().clone()
for train_step in range(3):
    maven.learn(sample_batch(args), args.episode_limit, train_step)

print("z_policy fc_1.weight.grad is None:", maven.z_policy.fc_1.weight.grad is None)
print("z_policy changed:", not torch.equal(z_policy_before, maven.z_policy.fc_1.weight))
