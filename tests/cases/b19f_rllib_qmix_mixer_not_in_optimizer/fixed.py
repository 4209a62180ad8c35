"""RLlib QMIX (ray-project/ray#5003, https://github.com/ray-project/ray/issues/5003):
"[rllib] QMIX: No backprop on the (mixer) hypernetworks?" In rllib/agents/qmix/qmix_policy_graph.py the
QMixer's hypernetwork weights never change during training; only the per-agent RNN learns.
Why: QMixPolicyGraph.__init__ builds the optimizer from `self.params = list(self.model.parameters())`.
The loss goes through self.mixer, so the mixer's parameters do get gradients, but RMSprop never steps them.
Fix (ericl, maintainer): "It looks like this is missing from the port: self.params += list(self.mixer.parameters())"."""
import torch as th
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import RMSprop


class RNNModel(nn.Module):  # rllib.agents.qmix.model.RNNModel, shortened
    def __init__(self, obs_size, n_actions, h_size=16):
        super().__init__()
        self.fc1 = nn.Linear(obs_size, h_size)
        self.rnn = nn.GRUCell(h_size, h_size)
        self.fc2 = nn.Linear(h_size, n_actions)
        self.h_size = h_size

    def state_init(self):
        return [self.fc1.weight.new(1, self.h_size).zero_().squeeze(0)]

    def forward(self, obs, hidden):
        x = F.relu(self.fc1(obs))
        h = self.rnn(x, hidden[0].reshape(-1, self.h_size))
        return self.fc2(h), [h]


class QMixer(nn.Module):  # rllib.agents.qmix.mixers.QMixer
    def __init__(self, n_agents, state_shape, mixing_embed_dim):
        super().__init__()
        self.n_agents = n_agents
        self.embed_dim = mixing_embed_dim
        self.state_dim = int(state_shape[0] * state_shape[1])
        self.hyper_w_1 = nn.Linear(self.state_dim, self.embed_dim * self.n_agents)
        self.hyper_w_final = nn.Linear(self.state_dim, self.embed_dim)
        self.hyper_b_1 = nn.Linear(self.state_dim, self.embed_dim)
        self.V = nn.Sequential(nn.Linear(self.state_dim, self.embed_dim), nn.ReLU(), nn.Linear(self.embed_dim, 1))

    def forward(self, agent_qs, states):
        bs = agent_qs.size(0)
        states = states.reshape(-1, self.state_dim)
        agent_qs = agent_qs.view(-1, 1, self.n_agents)
        w1 = th.abs(self.hyper_w_1(states)).view(-1, self.n_agents, self.embed_dim)
        b1 = self.hyper_b_1(states).view(-1, 1, self.embed_dim)
        hidden = F.elu(th.bmm(agent_qs, w1) + b1)
        w_final = th.abs(self.hyper_w_final(states)).view(-1, self.embed_dim, 1)
        v = self.V(states).view(-1, 1, 1)
        return (th.bmm(hidden, w_final) + v).view(bs, -1, 1)


def _mac(model, obs, h):
    B, n_agents = obs.size(0), obs.size(1)
    q_flat, h_flat = model(obs.reshape([B * n_agents, -1]), [s.reshape([B * n_agents, -1]) for s in h])
    return q_flat.reshape([B, n_agents, -1]), [s.reshape([B, n_agents, -1]) for s in h_flat]


class QMixLoss(nn.Module):
    def __init__(self, model, target_model, mixer, target_mixer, n_agents, n_actions, gamma=0.99):
        nn.Module.__init__(self)
        self.model, self.target_model = model, target_model
        self.mixer, self.target_mixer = mixer, target_mixer
        self.n_agents, self.n_actions, self.gamma = n_agents, n_actions, gamma

    def forward(self, rewards, actions, terminated, mask, obs):
        B, T = obs.size(0), obs.size(1)
        mac_out = []
        h = [s.expand([B, self.n_agents, -1]) for s in self.model.state_init()]
        for t in range(T):
            q, h = _mac(self.model, obs[:, t], h)
            mac_out.append(q)
        mac_out = th.stack(mac_out, dim=1)
        chosen_action_qvals = th.gather(mac_out[:, :-1], dim=3, index=actions.unsqueeze(3)).squeeze(3)
        target_mac_out = []
        target_h = [s.expand([B, self.n_agents, -1]) for s in self.target_model.state_init()]
        for t in range(T):
            target_q, target_h = _mac(self.target_model, obs[:, t], target_h)
            target_mac_out.append(target_q)
        target_mac_out = th.stack(target_mac_out[1:], dim=1)
        target_max_qvals = target_mac_out.max(dim=3)[0]
        chosen_action_qvals = self.mixer(chosen_action_qvals, obs[:, :-1])
        target_max_qvals = self.target_mixer(target_max_qvals, obs[:, 1:])
        targets = rewards + self.gamma * (1 - terminated) * target_max_qvals
        td_error = (chosen_action_qvals - targets.detach())
        mask = mask.expand_as(td_error)
        masked_td_error = td_error * mask
        loss = (masked_td_error**2).sum() / mask.sum()
        return loss, mask, masked_td_error, chosen_action_qvals, targets


class QMixPolicyGraph:
    def __init__(self, obs_size, n_agents, n_actions, config):
        self.config = config
        self.n_agents, self.n_actions, self.obs_size = n_agents, n_actions, obs_size
        self.model = RNNModel(obs_size, n_actions)
        self.target_model = RNNModel(obs_size, n_actions)
        self.state_shape = [self.obs_size, self.n_agents]
        self.mixer = QMixer(self.n_agents, self.state_shape, config["mixing_embed_dim"])
        self.target_mixer = QMixer(self.n_agents, self.state_shape, config["mixing_embed_dim"])
        self.update_target()  # initial sync

        # Setup optimizer
        self.params = list(self.model.parameters()) + list(self.mixer.parameters())
        self.loss = QMixLoss(self.model, self.target_model, self.mixer, self.target_mixer,
                             self.n_agents, self.n_actions, self.config["gamma"])
        self.optimiser = RMSprop(params=self.params, lr=config["lr"], alpha=config["optim_alpha"],
                                 eps=config["optim_eps"])

    def compute_apply(self, rewards, actions, terminated, mask, obs):
        loss_out, mask, masked_td_error, chosen_action_qvals, targets = \
            self.loss(rewards, actions, terminated, mask, obs)
        self.optimiser.zero_grad()
        loss_out.backward()
        grad_norm = th.nn.utils.clip_grad_norm_(self.params, self.config["grad_norm_clipping"])
        self.optimiser.step()
        return {"loss": loss_out.item(), "grad_norm": grad_norm.item()}

    def update_target(self):
        self.target_model.load_state_dict(self.model.state_dict())
        self.target_mixer.load_state_dict(self.mixer.state_dict())


th.manual_seed(0)
config = {"mixing_embed_dim": 8, "gamma": 0.99, "lr": 0.0005, "optim_alpha": 0.99, "optim_eps": 0.00001,
          "grad_norm_clipping": 10}
policy = QMixPolicyGraph(obs_size=4, n_agents=2, n_actions=3, config=config)
before = policy.mixer.hyper_w_1.weight.detach().clone()
B, T = 4, 5
for step in range(5):
    obs = th.randn(B, T, 2, 4)
    actions = th.randint(0, 3, (B, T - 1, 2))
    rewards = th.randn(B, T - 1, 1)
    terminated = th.zeros(B, T - 1, 1)
    mask = th.ones(B, T - 1, 1)
    print(step, policy.compute_apply(rewards, actions, terminated, mask, obs))
print("mixer grad is None:", policy.mixer.hyper_w_1.weight.grad is None)
print("mixer weights changed:", not th.equal(before, policy.mixer.hyper_w_1.weight))
