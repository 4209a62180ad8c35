"""dreamer-pytorch (juliusfrost/dreamer-pytorch PR #79, https://github.com/juliusfrost/dreamer-pytorch/pull/79):
"fix algo bug of value optimizer optimizing wrong params". dreamer/algos/dreamer_algo.py built
`self.value_optimizer = torch.optim.Adam(get_parameters(self.model_modules), lr=self.value_lr)`; the value model
never trains, and neither does the world model.
Why: value_model is in no optimizer, so value_loss.backward() fills its .grad and nothing steps it. And because
value_optimizer holds the world-model parameters, value_optimizer.zero_grad() (called after model_loss.backward())
erases the world model's gradients before model_optimizer.step() runs.
Fix (the PR's, acknowledged by the maintainer): build value_optimizer from get_parameters(self.value_modules)."""
import torch
import torch.nn.functional as F
from torch import nn


def get_parameters(modules):
    """dreamer/utils/module.py"""
    model_parameters = []
    for module in modules:
        model_parameters += list(module.parameters())
    return model_parameters


class FreezeParameters:
    """dreamer/utils/module.py: context manager to locally freeze gradients."""

    def __init__(self, modules):
        self.modules = modules
        self.param_states = [p.requires_grad for p in get_parameters(self.modules)]

    def __enter__(self):
        for param in get_parameters(self.modules):
            param.requires_grad = False

    def __exit__(self, exc_type, exc_val, exc_tb):
        for i, param in enumerate(get_parameters(self.modules)):
            param.requires_grad = self.param_states[i]


class AgentModel(nn.Module):
    """dreamer.models.agent.AgentModel in short: world model, action decoder and value model."""

    def __init__(self, obs_dim=8, feat=4, act=1):
        super().__init__()
        self.observation_encoder = nn.Linear(obs_dim, 6)
        self.representation = nn.Linear(6, feat)
        self.observation_decoder = nn.Linear(feat, obs_dim)
        self.reward_model = nn.Linear(feat, 1)
        self.transition = nn.Linear(feat + act, feat)
        self.action_decoder = nn.Linear(feat, act)
        self.value_model = nn.Linear(feat, 1)


class Dreamer:
    def __init__(self, model, model_lr=6e-4, value_lr=8e-5, actor_lr=8e-5, grad_clip=100.0, horizon=5, discount=0.99):
        self.model = model
        self.model_lr, self.value_lr, self.actor_lr = model_lr, value_lr, actor_lr
        self.grad_clip, self.horizon, self.discount = grad_clip, horizon, discount
        self.optim_initialize()

    def optim_initialize(self):
        model = self.model
        self.model_modules = [model.observation_encoder,
                              model.observation_decoder,
                              model.reward_model,
                              model.representation,
                              model.transition]
        self.actor_modules = [model.action_decoder]
        self.value_modules = [model.value_model]
        self.model_optimizer = torch.optim.Adam(get_parameters(self.model_modules), lr=self.model_lr)
        self.actor_optimizer = torch.optim.Adam(get_parameters(self.actor_modules), lr=self.actor_lr)
        self.value_optimizer = torch.optim.Adam(get_parameters(self.value_modules), lr=self.value_lr)

    def optimize_agent(self, observation, reward):
        model_loss, actor_loss, value_loss = self.loss(observation, reward)

        self.model_optimizer.zero_grad()
        model_loss.backward()
        torch.nn.utils.clip_grad_norm_(get_parameters(self.model_modules), self.grad_clip)

        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        torch.nn.utils.clip_grad_norm_(get_parameters(self.actor_modules), self.grad_clip)

        self.value_optimizer.zero_grad()
        value_loss.backward()
        torch.nn.utils.clip_grad_norm_(get_parameters(self.value_modules), self.grad_clip)

        self.model_optimizer.step()
        self.actor_optimizer.step()
        self.value_optimizer.step()

    def loss(self, observation, reward):
        model = self.model
        # Model Loss
        embed = model.observation_encoder(observation)
        post = torch.tanh(model.representation(embed))
        image_pred = model.observation_decoder(post)
        reward_pred = model.reward_model(post)
        model_loss = F.mse_loss(image_pred, observation) + F.mse_loss(reward_pred, reward)

        # ------------------------------------------  Gradient Barrier  ------------------------------------------------
        with torch.no_grad():
            flat_post = post.reshape(-1, post.shape[-1])
        feat, imag_feat = flat_post, []
        for _ in range(self.horizon):
            action = torch.tanh(model.action_decoder(feat))
            feat = torch.tanh(model.transition(torch.cat([feat, action], -1)))
            imag_feat.append(feat)
        imag_feat = torch.stack(imag_feat)

        # freeze model parameters as only action model gradients needed
        with FreezeParameters(self.model_modules + self.value_modules):
            imag_reward = model.reward_model(imag_feat)
            value = model.value_model(imag_feat)
        returns = imag_reward[:-1] + self.discount * value[1:]
        actor_loss = -torch.mean(returns)

        # ------------------------------------------  Gradient Barrier  ------------------------------------------------
        with torch.no_grad():
            value_feat = imag_feat[:-1].detach()
            value_target = returns.detach()
        value_pred = torch.distributions.Normal(model.value_model(value_feat), 1)
        log_prob = value_pred.log_prob(value_target)
        value_loss = -torch.mean(log_prob)
        return model_loss, actor_loss, value_loss


torch.manual_seed(0)
agent = Dreamer(AgentModel())
before = {n: p.detach().clone() for n, p in agent.model.named_parameters()}
for _ in range(5):
    agent.optimize_agent(torch.randn(16, 8), torch.randn(16, 1))
for name in ["observation_encoder.weight", "action_decoder.weight", "value_model.weight"]:
    print(name, "changed:", not torch.equal(before[name], dict(agent.model.named_parameters())[name]))
