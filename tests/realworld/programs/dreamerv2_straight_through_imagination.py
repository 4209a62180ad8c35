"""DreamerV2 (discrete latents): world model with straight-through one-hot stochastic states and KL
balancing, actor trained by backpropagating imagined lambda-returns through the frozen world model,
critic trained on detached imagined states, slow target critic.

Source: https://github.com/RajGhugare19/dreamerv2 (dreamerv2/training/trainer.py, models/rssm.py,
models/actor.py, utils/module.py `FreezeParameters`), the PyTorch port of danijar/dreamerv2.

Patterns kept (all right):
- Straight-through samples: `stoch = dist.sample(); stoch += dist.probs - dist.probs.detach()` in the RSSM
  and `action = action + action_dist.probs - action_dist.probs.detach()` in the actor: forward uses the
  one-hot sample, backward uses the gradient of the probabilities.
- KL balancing: `kl(post.detach(), prior)` and `kl(post, prior.detach())` weighted 0.8 / 0.2, so the prior
  and the posterior are trained at different rates; `torch.max(kl, free_nats)` as free bits.
- The imagination start states are `rssm_detach`-ed under `torch.no_grad()`; the actor input is
  `model_state.detach()` at each imagined step, so the actor learns only through the actions it emits.
- `FreezeParameters` sets `requires_grad = False` on the world model (and reward, discount, target critic)
  during imagination and restores it on exit: actor gradients pass through those modules to the actions
  without updating them.
- `discount_arr = gamma * torch.round(discount_dist.probs)`: rounding is zero-gradient by design.
- The critic is fit on `imag_modelstates[:-1].detach()` against `lambda_returns.detach()` computed under
  `torch.no_grad()`; the target critic is never optimised, only refreshed by
  `target_param.data.copy_(mix * param.data + (1 - mix) * target_param.data)`. As in the repo its
  parameters keep `requires_grad=True` but it is only ever called inside `FreezeParameters`, so it never
  enters a graph.
- Three optimizers (world model, actor, critic) over disjoint parameter sets, each with its own backward.
"""
import os

import torch
import torch.distributions as td
import torch.nn as nn
import torch.nn.functional as F


def get_parameters(modules):
    model_parameters = []
    for module in modules:
        model_parameters += list(module.parameters())
    return model_parameters


class FreezeParameters:
    def __init__(self, modules):
        self.modules = modules
        self.param_states = [p.requires_grad for p in get_parameters(self.modules)]

    def __enter__(self):
        for param in get_parameters(self.modules):
            param.requires_grad = False

    def __exit__(self, exc_type, exc_val, exc_tb):
        for i, param in enumerate(get_parameters(self.modules)):
            param.requires_grad = self.param_states[i]


class RSSM(nn.Module):
    def __init__(self, action_size, embed_size, deter_size=32, category_size=4, class_size=4, hidden=32):
        super().__init__()
        self.category_size, self.class_size = category_size, class_size
        self.stoch_size = category_size * class_size
        self.deter_size = deter_size
        self.fc_embed_state_action = nn.Sequential(nn.Linear(self.stoch_size + action_size, deter_size), nn.ELU())
        self.rnn = nn.GRUCell(deter_size, deter_size)
        self.fc_prior = nn.Sequential(nn.Linear(deter_size, hidden), nn.ELU(), nn.Linear(hidden, self.stoch_size))
        self.fc_posterior = nn.Sequential(nn.Linear(deter_size + embed_size, hidden), nn.ELU(),
                                          nn.Linear(hidden, self.stoch_size))

    def get_stoch_state(self, logit):
        shape = logit.shape
        logit = torch.reshape(logit, shape=(*shape[:-1], self.category_size, self.class_size))
        dist = td.OneHotCategorical(logits=logit)
        stoch = dist.sample()
        stoch += dist.probs - dist.probs.detach()
        return torch.flatten(stoch, start_dim=-2, end_dim=-1)

    def get_dist(self, logit):
        shape = logit.shape
        logit = torch.reshape(logit, shape=(*shape[:-1], self.category_size, self.class_size))
        return td.Independent(td.OneHotCategoricalStraightThrough(logits=logit), 1)

    @staticmethod
    def get_model_state(state):
        return torch.cat((state["deter"], state["stoch"]), dim=-1)

    @staticmethod
    def rssm_detach(state):
        return {k: v.detach() for k, v in state.items()}

    def init_state(self, batch):
        return {"logit": torch.zeros(batch, self.stoch_size), "stoch": torch.zeros(batch, self.stoch_size),
                "deter": torch.zeros(batch, self.deter_size)}

    def rssm_imagine(self, prev_action, prev_state, nonterms=True):
        state_action_embed = self.fc_embed_state_action(torch.cat([prev_state["stoch"] * nonterms, prev_action], dim=-1))
        deter_state = self.rnn(state_action_embed, prev_state["deter"] * nonterms)
        prior_logit = self.fc_prior(deter_state)
        return {"logit": prior_logit, "stoch": self.get_stoch_state(prior_logit), "deter": deter_state}

    def rssm_observe(self, obs_embed, prev_action, prev_nonterm, prev_state):
        prior = self.rssm_imagine(prev_action, prev_state, prev_nonterm)
        posterior_logit = self.fc_posterior(torch.cat([prior["deter"], obs_embed], dim=-1))
        posterior = {"logit": posterior_logit, "stoch": self.get_stoch_state(posterior_logit), "deter": prior["deter"]}
        return prior, posterior

    def rollout_observation(self, seq_len, obs_embed, action, nonterms, prev_state):
        priors, posteriors = [], []
        for t in range(seq_len):
            prev_action = action[t] * nonterms[t]
            prior, prev_state = self.rssm_observe(obs_embed[t], prev_action, nonterms[t], prev_state)
            priors.append(prior)
            posteriors.append(prev_state)
        stack = lambda states: {k: torch.stack([s[k] for s in states]) for k in states[0]}
        return stack(priors), stack(posteriors)

    def rollout_imagination(self, horizon, actor, prev_state):
        states, action_entropy, imag_log_probs = [], [], []
        rssm_state = prev_state
        for t in range(horizon):
            action, action_dist = actor(self.get_model_state(rssm_state).detach())
            rssm_state = self.rssm_imagine(action, rssm_state)
            states.append(rssm_state)
            action_entropy.append(action_dist.entropy())
            imag_log_probs.append(action_dist.log_prob(torch.round(action.detach())))
        stacked = {k: torch.stack([s[k] for s in states]) for k in states[0]}
        return stacked, torch.stack(imag_log_probs, dim=0), torch.stack(action_entropy, dim=0)


class DiscreteActionModel(nn.Module):
    def __init__(self, action_size, modelstate_size, hidden=32):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(modelstate_size, hidden), nn.ELU(), nn.Linear(hidden, action_size))

    def forward(self, model_state):
        action_dist = td.OneHotCategorical(logits=self.model(model_state))
        action = action_dist.sample()
        action = action + action_dist.probs - action_dist.probs.detach()
        return action, action_dist


class DenseModel(nn.Module):
    def __init__(self, output_size, input_size, dist="normal", hidden=32):
        super().__init__()
        self.dist = dist
        self.model = nn.Sequential(nn.Linear(input_size, hidden), nn.ELU(), nn.Linear(hidden, output_size))

    def forward(self, x):
        out = self.model(x)
        if self.dist == "normal":
            return td.Independent(td.Normal(out, 1), 1)
        return td.Independent(td.Bernoulli(logits=out), 1)


def compute_return(reward, value, discount, bootstrap, lambda_):
    next_values = torch.cat([value[1:], bootstrap[None]], 0)
    target = reward + discount * next_values * (1 - lambda_)
    outputs = []
    accumulated_reward = bootstrap
    for t in reversed(range(reward.shape[0])):
        accumulated_reward = target[t] + discount[t] * lambda_ * accumulated_reward
        outputs.append(accumulated_reward)
    return torch.flip(torch.stack(outputs), [0])


class Trainer:
    def __init__(self, obs_size=8, action_size=3, embed_size=16, horizon=5, discount=0.99, lambda_=0.95,
                 kl_balance_scale=0.8, free_nats=0.0, actor_entropy_scale=1e-3, slow_target_fraction=1.0):
        self.horizon, self.discount, self.lambda_ = horizon, discount, lambda_
        self.kl_balance_scale, self.free_nats = kl_balance_scale, free_nats
        self.actor_entropy_scale, self.slow_target_fraction = actor_entropy_scale, slow_target_fraction
        self.ObsEncoder = nn.Sequential(nn.Linear(obs_size, embed_size), nn.ELU())
        self.RSSM = RSSM(action_size, embed_size)
        modelstate_size = self.RSSM.deter_size + self.RSSM.stoch_size
        self.ObsDecoder = DenseModel(obs_size, modelstate_size)
        self.RewardDecoder = DenseModel(1, modelstate_size)
        self.DiscountModel = DenseModel(1, modelstate_size, dist="binary")
        self.ActionModel = DiscreteActionModel(action_size, modelstate_size)
        self.ValueModel = DenseModel(1, modelstate_size)
        self.TargetValueModel = DenseModel(1, modelstate_size)
        self.TargetValueModel.load_state_dict(self.ValueModel.state_dict())
        self.world_list = [self.ObsEncoder, self.RSSM, self.RewardDecoder, self.ObsDecoder, self.DiscountModel]
        self.actor_list = [self.ActionModel]
        self.value_list = [self.ValueModel]
        self.model_optimizer = torch.optim.Adam(get_parameters(self.world_list), 2e-3)
        self.actor_optimizer = torch.optim.Adam(get_parameters(self.actor_list), 1e-3)
        self.value_optimizer = torch.optim.Adam(get_parameters(self.value_list), 1e-3)

    def representation_loss(self, obs, actions, rewards, nonterms):
        embed = self.ObsEncoder(obs)
        prev_rssm_state = self.RSSM.init_state(obs.shape[1])
        prior, posterior = self.RSSM.rollout_observation(obs.shape[0], embed, actions, nonterms, prev_rssm_state)
        post_modelstate = self.RSSM.get_model_state(posterior)
        obs_loss = -torch.mean(self.ObsDecoder(post_modelstate[:-1]).log_prob(obs[:-1]))
        reward_loss = -torch.mean(self.RewardDecoder(post_modelstate[:-1]).log_prob(rewards[1:]))
        pcont_loss = -torch.mean(self.DiscountModel(post_modelstate[:-1]).log_prob(nonterms[1:]))
        prior_dist, post_dist = self.RSSM.get_dist(prior["logit"]), self.RSSM.get_dist(posterior["logit"])
        kl_lhs = torch.mean(td.kl_divergence(self.RSSM.get_dist(posterior["logit"].detach()), prior_dist))
        kl_rhs = torch.mean(td.kl_divergence(post_dist, self.RSSM.get_dist(prior["logit"].detach())))
        kl_lhs = torch.max(kl_lhs, kl_lhs.new_full(kl_lhs.size(), self.free_nats))
        kl_rhs = torch.max(kl_rhs, kl_rhs.new_full(kl_rhs.size(), self.free_nats))
        kl_loss = self.kl_balance_scale * kl_lhs + (1 - self.kl_balance_scale) * kl_rhs
        model_loss = kl_loss + reward_loss + obs_loss + pcont_loss
        return model_loss, posterior

    def actorcritic_loss(self, posterior):
        with torch.no_grad():
            batched_posterior = self.RSSM.rssm_detach({k: v[:-1].reshape(-1, v.shape[-1]) for k, v in posterior.items()})
        with FreezeParameters(self.world_list):
            imag_rssm_states, imag_log_prob, policy_entropy = self.RSSM.rollout_imagination(
                self.horizon, self.ActionModel, batched_posterior)
        imag_modelstates = self.RSSM.get_model_state(imag_rssm_states)
        with FreezeParameters(self.world_list + self.value_list + [self.TargetValueModel] + [self.DiscountModel]):
            imag_reward = self.RewardDecoder(imag_modelstates).mean
            imag_value = self.TargetValueModel(imag_modelstates).mean
            discount_dist = self.DiscountModel(imag_modelstates)
            discount_arr = self.discount * torch.round(discount_dist.base_dist.probs)
        lambda_returns = compute_return(imag_reward[:-1], imag_value[:-1], discount_arr[:-1],
                                        bootstrap=imag_value[-1], lambda_=self.lambda_)
        objective = lambda_returns  # actor_grad == "dynamics"
        discount_arr = torch.cat([torch.ones_like(discount_arr[:1]), discount_arr[1:]])
        discount = torch.cumprod(discount_arr[:-1], 0)
        policy_entropy = policy_entropy[1:].unsqueeze(-1)
        actor_loss = -torch.sum(torch.mean(discount * (objective + self.actor_entropy_scale * policy_entropy), dim=1))
        with torch.no_grad():
            value_modelstates = imag_modelstates[:-1].detach()
            value_discount = discount.detach()
            value_target = lambda_returns.detach()
        value_dist = self.ValueModel(value_modelstates)
        value_loss = -torch.mean(value_discount * value_dist.log_prob(value_target).unsqueeze(-1))
        return actor_loss, value_loss

    def train_batch(self, obs, actions, rewards, nonterms):
        model_loss, posterior = self.representation_loss(obs, actions, rewards, nonterms)
        self.model_optimizer.zero_grad()
        model_loss.backward()
        nn.utils.clip_grad_norm_(get_parameters(self.world_list), 100.0)
        self.model_optimizer.step()

        actor_loss, value_loss = self.actorcritic_loss(posterior)
        self.actor_optimizer.zero_grad()
        self.value_optimizer.zero_grad()
        actor_loss.backward()
        value_loss.backward()
        nn.utils.clip_grad_norm_(get_parameters(self.actor_list), 100.0)
        nn.utils.clip_grad_norm_(get_parameters(self.value_list), 100.0)
        self.actor_optimizer.step()
        self.value_optimizer.step()
        return model_loss.item(), actor_loss.item(), value_loss.item()

    def update_target(self):
        mix = self.slow_target_fraction
        for param, target_param in zip(self.ValueModel.parameters(), self.TargetValueModel.parameters()):
            target_param.data.copy_(mix * param.data + (1 - mix) * target_param.data)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    seq_len, batch, obs_size, action_size = 6, 4, 8, 3
    trainer = Trainer(obs_size, action_size)
    for step in range(5):
        obs = torch.randn(seq_len, batch, obs_size)
        actions = F.one_hot(torch.randint(0, action_size, (seq_len, batch)), action_size).float()
        rewards = obs[..., :1].clamp(-1, 1)
        nonterms = (torch.rand(seq_len, batch, 1) > 0.1).float()
        model_loss, actor_loss, value_loss = trainer.train_batch(obs, actions, rewards, nonterms)
        if step % 2 == 1:
            trainer.update_target()
        print(f"step {step} model {model_loss:.4f} actor {actor_loss:.4f} value {value_loss:.4f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({name: getattr(trainer, name).state_dict() for name in
                    ["ObsEncoder", "RSSM", "ObsDecoder", "RewardDecoder", "DiscountModel", "ActionModel",
                     "ValueModel", "TargetValueModel"]}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
