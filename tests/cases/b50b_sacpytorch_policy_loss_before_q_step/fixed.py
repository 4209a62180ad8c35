# Which version of PyTorch should be used?  (RuntimeError: one of the variables needed for
#   gradient computation has been modified by an inplace operation)
# https://github.com/toshikwa/soft-actor-critic.pytorch/issues/1
# What went wrong: SacAgent.learn() builds policy_loss (which goes through the critic Q1/Q2)
#   before the critic updates; update_params(q1_optim, ...) then runs q1_optim.step(),
#   which rewrites Q1's weights in place, and policy_loss.backward() in the later
#   update_params(policy_optim, ...) needs those saved weights -> RuntimeError with
#   torch >= 1.5 (it ran silently on torch 1.3.1, the version the author suggested).
# Fix (reporter, acknowledged by the maintainer): calculate policy_loss after updating Q1 and Q2.
# Plain-torch reduction of code/agent.py, model.py and utils.py (no env, no replay memory:
#   a random batch stands in for memory.sample()).
import torch
from torch import nn
from torch.optim import Adam

torch.manual_seed(0)
obs_dim, act_dim, batch_size = 3, 1, 16


def grad_false(network):
    for param in network.parameters():
        param.requires_grad = False


def hard_update(target, source):
    target.load_state_dict(source.state_dict())


def soft_update(target, source, tau):
    for t, s in zip(target.parameters(), source.parameters()):
        t.data.copy_(t.data * (1.0 - tau) + s.data * tau)


def update_params(optim, network, loss, grad_clip=None, retain_graph=False):
    optim.zero_grad()
    loss.backward(retain_graph=retain_graph)
    if grad_clip is not None:
        for p in network.modules():
            torch.nn.utils.clip_grad_norm_(p.parameters(), grad_clip)
    optim.step()


def create_linear_network(input_dim, output_dim, hidden_units=[32, 32]):
    layers = []
    units = input_dim
    for next_units in hidden_units:
        layers += [nn.Linear(units, next_units), nn.ReLU()]
        units = next_units
    layers.append(nn.Linear(units, output_dim))
    return nn.Sequential(*layers)


class QNetwork(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_units=[32, 32]):
        super().__init__()
        self.Q = create_linear_network(num_inputs + num_actions, 1, hidden_units)

    def forward(self, x):
        return self.Q(x)


class TwinnedQNetwork(nn.Module):
    def __init__(self, num_inputs, num_actions, hidden_units=[32, 32]):
        super().__init__()
        self.Q1 = QNetwork(num_inputs, num_actions, hidden_units)
        self.Q2 = QNetwork(num_inputs, num_actions, hidden_units)

    def forward(self, states, actions):
        x = torch.cat([states, actions], dim=1)
        return self.Q1(x), self.Q2(x)


class GaussianPolicy(nn.Module):
    LOG_STD_MAX, LOG_STD_MIN, eps = 2, -20, 1e-6

    def __init__(self, num_inputs, num_actions, hidden_units=[32, 32]):
        super().__init__()
        self.policy = create_linear_network(num_inputs, num_actions * 2, hidden_units)

    def forward(self, states):
        mean, log_std = torch.chunk(self.policy(states), 2, dim=-1)
        log_std = torch.clamp(log_std, min=self.LOG_STD_MIN, max=self.LOG_STD_MAX)
        return mean, log_std

    def sample(self, states):
        means, log_stds = self.forward(states)
        normals = torch.distributions.Normal(means, log_stds.exp())
        xs = normals.rsample()
        actions = torch.tanh(xs)
        log_probs = normals.log_prob(xs) - torch.log(1 - actions.pow(2) + self.eps)
        entropies = -log_probs.sum(dim=1, keepdim=True)
        return actions, entropies, torch.tanh(means)


class SacAgent:
    def __init__(self, lr=0.0003, gamma=0.99, tau=0.005, grad_clip=None):
        self.policy = GaussianPolicy(obs_dim, act_dim)
        self.critic = TwinnedQNetwork(obs_dim, act_dim)
        self.critic_target = TwinnedQNetwork(obs_dim, act_dim).eval()
        hard_update(self.critic_target, self.critic)
        grad_false(self.critic_target)

        self.policy_optim = Adam(self.policy.parameters(), lr=lr)
        self.q1_optim = Adam(self.critic.Q1.parameters(), lr=lr)
        self.q2_optim = Adam(self.critic.Q2.parameters(), lr=lr)

        self.target_entropy = -float(act_dim)
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.alpha = self.log_alpha.exp()
        self.alpha_optim = Adam([self.log_alpha], lr=lr)

        self.gamma_n, self.tau, self.grad_clip = gamma, tau, grad_clip
        self.learning_steps = 0

    def sample_batch(self):
        return (torch.randn(batch_size, obs_dim), torch.rand(batch_size, act_dim) * 2 - 1,
                torch.randn(batch_size, 1), torch.randn(batch_size, obs_dim),
                torch.zeros(batch_size, 1))

    def calc_current_q(self, states, actions, rewards, next_states, dones):
        return self.critic(states, actions)

    def calc_target_q(self, states, actions, rewards, next_states, dones):
        with torch.no_grad():
            next_actions, next_entropies, _ = self.policy.sample(next_states)
            next_q1, next_q2 = self.critic_target(next_states, next_actions)
            next_q = torch.min(next_q1, next_q2) + self.alpha * next_entropies
        return rewards + (1.0 - dones) * self.gamma_n * next_q

    def learn(self):
        self.learning_steps += 1
        soft_update(self.critic_target, self.critic, self.tau)
        batch = self.sample_batch()
        weights = 1.

        q1_loss, q2_loss, errors, mean_q1, mean_q2 =\
            self.calc_critic_loss(batch, weights)

        update_params(
            self.q1_optim, self.critic.Q1, q1_loss, self.grad_clip)
        update_params(
            self.q2_optim, self.critic.Q2, q2_loss, self.grad_clip)
        # calculate `policy_loss` after updating `Q1、Q2`
        policy_loss, entropies = self.calc_policy_loss(batch, weights)
        update_params(
            self.policy_optim, self.policy, policy_loss, self.grad_clip)

        entropy_loss = self.calc_entropy_loss(entropies, weights)
        update_params(self.alpha_optim, None, entropy_loss)
        self.alpha = self.log_alpha.exp()

    def calc_critic_loss(self, batch, weights):
        curr_q1, curr_q2 = self.calc_current_q(*batch)
        target_q = self.calc_target_q(*batch)
        errors = torch.abs(curr_q1.detach() - target_q)
        mean_q1 = curr_q1.detach().mean().item()
        mean_q2 = curr_q2.detach().mean().item()
        q1_loss = torch.mean((curr_q1 - target_q).pow(2) * weights)
        q2_loss = torch.mean((curr_q2 - target_q).pow(2) * weights)
        return q1_loss, q2_loss, errors, mean_q1, mean_q2

    def calc_policy_loss(self, batch, weights):
        states, actions, rewards, next_states, dones = batch
        sampled_action, entropy, _ = self.policy.sample(states)
        q1, q2 = self.critic(states, sampled_action)
        q = torch.min(q1, q2)
        policy_loss = torch.mean((- q - self.alpha * entropy) * weights)
        return policy_loss, entropy

    def calc_entropy_loss(self, entropy, weights):
        return -torch.mean(self.log_alpha * (self.target_entropy - entropy).detach() * weights)


agent = SacAgent()
for _ in range(3):
    agent.learn()
print("policy last-layer grad norm:", agent.policy.policy[-1].weight.grad.norm().item())
print("log_alpha:", agent.log_alpha.item())
