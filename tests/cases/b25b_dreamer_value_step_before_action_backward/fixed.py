"""cross32768/Dreamer_PyTorch issue #2 "Bug happened during the update of action model",
https://github.com/cross32768/Dreamer_PyTorch/issues/2: in train.py the value model is updated first
(value_loss.backward(retain_graph=True); value_optimizer.step()) and the action model afterwards from
action_loss = -lambda_value_target.mean(). The lambda returns were computed from value_model's outputs on the
imagined states, so action_loss's graph saved value_model's weights; value_optimizer.step() (Adam) writes those
weights in place, and action_loss.backward() raises "one of the variables needed for gradient computation has been
modified by an inplace operation: [torch.FloatTensor [400, 1]], which is output 0 of AsStridedBackward0, is at version 2"
(PyTorch >= 1.5 checks this; older versions silently used the updated weights).
Fix (the thread): step the value optimizer only after action_loss.backward() has run; here the value step moves
below and action_loss.backward() is restricted to the action model's parameters so that the value gradients stay
those of value_loss. The models (RSSM, encoder, reward/value/action heads), lambda_return and the replay buffer are
small vector-observation stand-ins of the repo's model.py / utils.py."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Normal
from torch.distributions.kl import kl_divergence
from torch.nn.functional import mse_loss
from torch.nn.utils import clip_grad_norm_
from torch.optim import Adam

torch.manual_seed(0)
torch.set_num_threads(1)


# --- model.py stand-in (vector observations instead of 64x64 images) --------------------------
class Encoder(nn.Module):
    def __init__(self, obs_dim=8, embed_dim=16):
        super().__init__()
        self.fc = nn.Linear(obs_dim, embed_dim)

    def forward(self, obs):
        return F.relu(self.fc(obs))


class RecurrentStateSpaceModel(nn.Module):
    def __init__(self, state_dim, action_dim, rnn_hidden_dim, embed_dim=16, min_stddev=0.1):
        super().__init__()
        self.fc_state_action = nn.Linear(state_dim + action_dim, rnn_hidden_dim)
        self.rnn = nn.GRUCell(rnn_hidden_dim, rnn_hidden_dim)
        self.fc_prior = nn.Linear(rnn_hidden_dim, 2 * state_dim)
        self.fc_posterior = nn.Linear(rnn_hidden_dim + embed_dim, 2 * state_dim)
        self._min_stddev = min_stddev

    def forward(self, state, action, rnn_hidden, embedded_next_obs):
        next_state_prior, rnn_hidden = self.prior(state, action, rnn_hidden)
        next_state_posterior = self.posterior(rnn_hidden, embedded_next_obs)
        return next_state_prior, next_state_posterior, rnn_hidden

    def prior(self, state, action, rnn_hidden):
        hidden = F.elu(self.fc_state_action(torch.cat([state, action], dim=1)))
        rnn_hidden = self.rnn(hidden, rnn_hidden)
        mean, stddev = self.fc_prior(rnn_hidden).chunk(2, dim=1)
        return Normal(mean, F.softplus(stddev) + self._min_stddev), rnn_hidden

    def posterior(self, rnn_hidden, embedded_obs):
        mean, stddev = self.fc_posterior(torch.cat([rnn_hidden, embedded_obs], dim=1)).chunk(2, dim=1)
        return Normal(mean, F.softplus(stddev) + self._min_stddev)


class ObservationModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, obs_dim=8):
        super().__init__()
        self.fc = nn.Linear(state_dim + rnn_hidden_dim, obs_dim)

    def forward(self, state, rnn_hidden):
        return self.fc(torch.cat([state, rnn_hidden], dim=1))


class RewardModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, hidden_dim=32):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, 1)

    def forward(self, state, rnn_hidden):
        return self.fc2(F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1))))


class ValueModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, hidden_dim=32):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, 1)

    def forward(self, state, rnn_hidden):
        return self.fc2(F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1))))


class ActionModel(nn.Module):
    def __init__(self, state_dim, rnn_hidden_dim, action_dim, hidden_dim=32):
        super().__init__()
        self.fc1 = nn.Linear(state_dim + rnn_hidden_dim, hidden_dim)
        self.fc_mean = nn.Linear(hidden_dim, action_dim)

    def forward(self, state, rnn_hidden):
        return torch.tanh(self.fc_mean(F.elu(self.fc1(torch.cat([state, rnn_hidden], dim=1)))))


# --- utils.py stand-in ------------------------------------------------------------------------
def lambda_return(rewards, values, gamma, lambda_):
    V_lambda = torch.zeros_like(rewards)
    H = rewards.shape[0] - 1
    V_n = torch.zeros_like(rewards)
    V_n[H] = values[H]
    for n in range(1, H + 1):
        V_n[:-n] = (gamma ** n) * values[n:]
        for k in range(1, n + 1):
            if k == n:
                V_n[:-n] += (gamma ** (n - 1)) * rewards[k:]
            else:
                V_n[:-n] += (gamma ** (k - 1)) * rewards[k:-n + k]
        if n == H:
            V_lambda += (lambda_ ** (H - 1)) * V_n
        else:
            V_lambda += (1 - lambda_) * (lambda_ ** (n - 1)) * V_n
    return V_lambda


def sample_batch(batch_size, chunk_length, obs_dim, action_dim):
    observations = torch.randn(batch_size, chunk_length, obs_dim)
    actions = torch.rand(batch_size, chunk_length, action_dim) * 2 - 1
    rewards = torch.randn(batch_size, chunk_length, 1)
    return observations, actions, rewards


# --- train.py, the update loop ----------------------------------------------------------------
class args:
    state_dim, rnn_hidden_dim, action_dim, obs_dim = 6, 16, 2, 8
    batch_size, chunk_length, imagination_horizon = 4, 6, 3
    gamma, lambda_, model_lr, value_lr, action_lr, eps = 0.99, 0.95, 6e-4, 8e-5, 8e-5, 1e-4
    clip_grad_norm, free_nats, collect_interval = 100, 3, 3


encoder = Encoder(args.obs_dim)
rssm = RecurrentStateSpaceModel(args.state_dim, args.action_dim, args.rnn_hidden_dim)
obs_model = ObservationModel(args.state_dim, args.rnn_hidden_dim, args.obs_dim)
reward_model = RewardModel(args.state_dim, args.rnn_hidden_dim)
model_params = (list(encoder.parameters()) + list(rssm.parameters()) +
                list(obs_model.parameters()) + list(reward_model.parameters()))
model_optimizer = Adam(model_params, lr=args.model_lr, eps=args.eps)
value_model = ValueModel(args.state_dim, args.rnn_hidden_dim)
action_model = ActionModel(args.state_dim, args.rnn_hidden_dim, args.action_dim)
value_optimizer = Adam(value_model.parameters(), lr=args.value_lr, eps=args.eps)
action_optimizer = Adam(action_model.parameters(), lr=args.action_lr, eps=args.eps)
action_before = [p.detach().clone() for p in action_model.parameters()]; value_before = [p.detach().clone() for p in value_model.parameters()]

for update_step in range(args.collect_interval):
    observations, actions, rewards = sample_batch(args.batch_size, args.chunk_length, args.obs_dim,
                                                  args.action_dim)
    observations = observations.transpose(0, 1)
    actions = actions.transpose(0, 1)
    rewards = rewards.transpose(0, 1)
    embedded_observations = encoder(observations.reshape(-1, args.obs_dim)).view(
        args.chunk_length, args.batch_size, -1)

    states = torch.zeros(args.chunk_length, args.batch_size, args.state_dim)
    rnn_hiddens = torch.zeros(args.chunk_length, args.batch_size, args.rnn_hidden_dim)
    state = torch.zeros(args.batch_size, args.state_dim)
    rnn_hidden = torch.zeros(args.batch_size, args.rnn_hidden_dim)

    kl_loss = 0
    for l in range(args.chunk_length - 1):
        next_state_prior, next_state_posterior, rnn_hidden = \
            rssm(state, actions[l], rnn_hidden, embedded_observations[l + 1])
        state = next_state_posterior.rsample()
        states[l + 1] = state
        rnn_hiddens[l + 1] = rnn_hidden
        kl = kl_divergence(next_state_prior, next_state_posterior).sum(dim=1)
        kl_loss += kl.clamp(min=args.free_nats).mean()
    kl_loss /= (args.chunk_length - 1)

    states = states[1:]
    rnn_hiddens = rnn_hiddens[1:]
    flatten_states = states.view(-1, args.state_dim)
    flatten_rnn_hiddens = rnn_hiddens.view(-1, args.rnn_hidden_dim)
    recon_observations = obs_model(flatten_states, flatten_rnn_hiddens).view(
        args.chunk_length - 1, args.batch_size, args.obs_dim)
    predicted_rewards = reward_model(flatten_states, flatten_rnn_hiddens).view(
        args.chunk_length - 1, args.batch_size, 1)
    obs_loss = 0.5 * mse_loss(recon_observations, observations[1:], reduction='none').mean([0, 1]).sum()
    reward_loss = 0.5 * mse_loss(predicted_rewards, rewards[:-1])

    model_loss = kl_loss + obs_loss + reward_loss
    model_optimizer.zero_grad()
    model_loss.backward()
    clip_grad_norm_(model_params, args.clip_grad_norm)
    model_optimizer.step()

    # compute target values
    flatten_states = flatten_states.detach()
    flatten_rnn_hiddens = flatten_rnn_hiddens.detach()
    imaginated_states = torch.zeros(args.imagination_horizon + 1, *flatten_states.shape)
    imaginated_rnn_hiddens = torch.zeros(args.imagination_horizon + 1, *flatten_rnn_hiddens.shape)
    imaginated_states[0] = flatten_states
    imaginated_rnn_hiddens[0] = flatten_rnn_hiddens
    for h in range(1, args.imagination_horizon + 1):
        actions = action_model(flatten_states, flatten_rnn_hiddens)
        flatten_states_prior, flatten_rnn_hiddens = rssm.prior(flatten_states, actions,
                                                               flatten_rnn_hiddens)
        flatten_states = flatten_states_prior.rsample()
        imaginated_states[h] = flatten_states
        imaginated_rnn_hiddens[h] = flatten_rnn_hiddens

    flatten_imaginated_states = imaginated_states.view(-1, args.state_dim)
    flatten_imaginated_rnn_hiddens = imaginated_rnn_hiddens.view(-1, args.rnn_hidden_dim)
    imaginated_rewards = reward_model(flatten_imaginated_states,
                                      flatten_imaginated_rnn_hiddens).view(args.imagination_horizon + 1, -1)
    imaginated_values = value_model(flatten_imaginated_states,
                                    flatten_imaginated_rnn_hiddens).view(args.imagination_horizon + 1, -1)
    lambda_value_target = lambda_return(imaginated_rewards, imaginated_values, args.gamma, args.lambda_)

    # update_value model
    value_loss = 0.5 * mse_loss(imaginated_values, lambda_value_target.detach())
    value_optimizer.zero_grad()
    value_loss.backward(retain_graph=True)
    clip_grad_norm_(value_model.parameters(), args.clip_grad_norm)
    # value_optimizer.step() runs below, once action_loss.backward() no longer needs the old weights

    # update value model and action model
    action_loss = -1 * (lambda_value_target.mean())
    action_optimizer.zero_grad()
    action_loss.backward(inputs=list(action_model.parameters()))
    clip_grad_norm_(action_model.parameters(), args.clip_grad_norm)
    action_optimizer.step(); value_optimizer.step()
    print('update_step: %3d model loss: %.5f, action_loss: %.5f value_loss: %.5f'
          % (update_step + 1, model_loss.item(), action_loss.item(), value_loss.item()))

value_changed = any(not torch.equal(a, p) for a, p in zip(value_before, value_model.parameters()))
print("value model changed:", value_changed)
print("action model changed:",
      any(not torch.equal(a, p) for a, p in zip(action_before, action_model.parameters())))
