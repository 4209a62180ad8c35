"""DLR-RM/stable-baselines3#391: with ent_coef="auto", an SAC/TQC model loaded from a checkpoint keeps its
entropy coefficient constant for the whole resumed training. `_setup_model()` builds `log_ent_coef` and
`ent_coef_optimizer = Adam([log_ent_coef])`; `load()` then puts the saved tensor back with
`recursive_setattr(model, name, pytorch_variables[name])`, replacing the attribute by a new tensor. train() computes
the loss from the new one (it gets the gradient), the optimizer steps the old one (no gradient)."""
import io

import torch as th
import torch.nn as nn
import torch.nn.functional as F

th.manual_seed(0)


def recursive_getattr(obj, attr):
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def recursive_setattr(obj, attr, value):
    *parents, last = attr.split(".")
    for part in parents:
        obj = getattr(obj, part)
    setattr(obj, last, value)


class Actor(nn.Module):
    def __init__(self, obs_dim=3, act_dim=1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, 2 * act_dim))

    def action_log_prob(self, obs):
        mean, log_std = self.net(obs).chunk(2, dim=-1)
        dist = th.distributions.Normal(mean, log_std.clamp(-20, 2).exp())
        gaussian_actions = dist.rsample()
        actions = th.tanh(gaussian_actions)
        log_prob = dist.log_prob(gaussian_actions) - th.log(1 - actions ** 2 + 1e-6)
        return actions, log_prob.sum(-1, keepdim=True)


class SAC:
    def __init__(self, learning_rate=3e-3, _init_setup_model=True):
        self.learning_rate = learning_rate
        self.target_entropy = -1.0
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self):
        self.actor = Actor()
        self.critic = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
        self.actor_optimizer = th.optim.Adam(self.actor.parameters(), lr=self.learning_rate)
        self.critic_optimizer = th.optim.Adam(self.critic.parameters(), lr=self.learning_rate)
        # ent_coef == "auto": learn the log of the entropy coefficient
        self.log_ent_coef = th.log(th.ones(1) * 1.0).requires_grad_(True)
        self.ent_coef_optimizer = th.optim.Adam([self.log_ent_coef], lr=self.learning_rate)

    def _get_torch_save_params(self):
        return ["actor", "critic", "actor_optimizer", "critic_optimizer", "ent_coef_optimizer"], ["log_ent_coef"]

    def train(self, gradient_steps):
        for _ in range(gradient_steps):
            obs, act = th.randn(64, 3), th.rand(64, 1) * 2 - 1
            reward = -(obs[:, :1] ** 2) - 0.1 * act ** 2
            actions_pi, log_prob = self.actor.action_log_prob(obs)
            ent_coef = th.exp(self.log_ent_coef.detach())
            ent_coef_loss = -(self.log_ent_coef * (log_prob + self.target_entropy).detach()).mean()
            self.ent_coef_optimizer.zero_grad()
            ent_coef_loss.backward()
            self.ent_coef_optimizer.step()

            critic_loss = F.mse_loss(self.critic(th.cat([obs, act], -1)), reward)
            self.critic_optimizer.zero_grad()
            critic_loss.backward()
            self.critic_optimizer.step()

            q_pi = self.critic(th.cat([obs, actions_pi], -1))
            actor_loss = (ent_coef * log_prob - q_pi).mean()
            self.actor_optimizer.zero_grad()
            actor_loss.backward()
            self.actor_optimizer.step()
        print(f"  train/ent_coef {ent_coef.item():.6f}")  # <- symptom

    def save(self):
        state_dicts, torch_vars = self._get_torch_save_params()
        buf = io.BytesIO()
        th.save({"params": {n: recursive_getattr(self, n).state_dict() for n in state_dicts},
                 "pytorch_variables": {n: recursive_getattr(self, n) for n in torch_vars}}, buf)
        buf.seek(0)
        return buf

    @classmethod
    def load(cls, buf):
        saved = th.load(buf)
        model = cls(_init_setup_model=False)
        model._setup_model()
        for name, state in saved["params"].items():
            recursive_getattr(model, name).load_state_dict(state)
        # put other pytorch variables back in place
        for name in saved["pytorch_variables"]:
            recursive_setattr(model, name + ".data", saved["pytorch_variables"][name].data)
        return model


model = SAC()
print("first run")
for _ in range(3):
    model.train(gradient_steps=10)
checkpoint = model.save()

model = SAC.load(checkpoint)
print("resumed from checkpoint")
for _ in range(3):
    model.train(gradient_steps=10)
