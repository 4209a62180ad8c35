"""ray-project/ray PR #62755, "[RLlib] CQL: implement Lagrangian adaptive alpha' in new-stack CQLTorchLearner":
with config.lagrangian=True the conservative weight alpha' becomes a learnable log-space tensor with its own Adam
optimizer, stepped after the main gradient step. The Lagrangian loss was written as
`-cql_alpha.detach() * (cql_constraint.detach() - lagrangian_thresh)`: the review pointed out that detaching
cql_alpha leaves log(alpha') without a gradient (its optimizer is a no-op); the author fixed it (b35e10f) by
detaching only the constraint."""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


@dataclass
class CQLConfig:
    lr: float = 3e-3
    lagrangian: bool = True
    lagrangian_thresh: float = 5.0
    lagrangian_lr: float = 1e-2
    min_q_weight: float = 5.0
    num_actions: int = 10
    gamma: float = 0.99


class QModule(nn.Module):
    def __init__(self, obs_dim=4, act_dim=2):
        super().__init__()
        self.act_dim = act_dim
        self.qf = nn.Sequential(nn.Linear(obs_dim + act_dim, 64), nn.ReLU(), nn.Linear(64, 1))

    def q(self, obs, act):
        return self.qf(torch.cat([obs, act], -1)).squeeze(-1)


class CQLTorchLearner:
    def __init__(self, config):
        self.config = config
        self.module = {"default_policy": QModule()}
        self.optimizer = torch.optim.Adam(self.module["default_policy"].parameters(), lr=config.lr)
        self._log_cql_alpha = {}
        self._cql_alpha_optim = {}
        self._pending_lagrangian_losses = {}

    def _get_log_cql_alpha(self, module_id, config):
        if module_id not in self._log_cql_alpha:
            log_alpha = torch.tensor(math.log(config.min_q_weight), requires_grad=True)
            self._log_cql_alpha[module_id] = log_alpha
            self._cql_alpha_optim[module_id] = torch.optim.Adam([log_alpha], lr=config.lagrangian_lr)
        return self._log_cql_alpha[module_id]

    def compute_loss_for_module(self, module_id, config, batch):
        module = self.module[module_id]
        obs, act, rew = batch["obs"], batch["actions"], batch["rewards"]
        q_selected = module.q(obs, act)
        critic_loss = F.mse_loss(q_selected, rew)
        # CQL(H): logsumexp over sampled random actions minus Q of the dataset actions
        rand_act = torch.rand(config.num_actions, *act.shape) * 2 - 1
        q_rand = torch.stack([module.q(obs, a) for a in rand_act], 0)
        logsumexp_q = torch.logsumexp(q_rand, 0).mean()
        cql_constraint = logsumexp_q - q_selected.mean()
        if config.lagrangian:
            log_cql_alpha = self._get_log_cql_alpha(module_id, config)
            cql_alpha = torch.clamp(torch.exp(log_cql_alpha), min=0.0)
            cql_loss = cql_alpha.detach() * (cql_constraint - config.lagrangian_thresh)
            # Lagrangian loss for alpha' (maximised w.r.t. alpha'); negated because the optimizer minimizes.
            lagrangian_loss = -cql_alpha.detach() * (cql_constraint.detach() - config.lagrangian_thresh)  # <- detach
            self._pending_lagrangian_losses[module_id] = lagrangian_loss
        else:
            cql_loss = config.min_q_weight * cql_constraint
        return critic_loss + cql_loss

    def compute_gradients(self, loss_per_module):
        total_loss = sum(loss_per_module.values()) + sum(self._pending_lagrangian_losses.values())
        self.optimizer.zero_grad()
        for optim in self._cql_alpha_optim.values():
            optim.zero_grad()
        total_loss.backward()

    def apply_gradients(self):
        self.optimizer.step()
        # step the alpha' optimizers after the main gradient step
        for optim in self._cql_alpha_optim.values():
            optim.step()
        self._pending_lagrangian_losses.clear()

    def update(self, batch):
        losses = {mid: self.compute_loss_for_module(mid, self.config, batch) for mid in self.module}
        self.compute_gradients(losses)
        self.apply_gradients()


learner = CQLTorchLearner(CQLConfig())
for it in range(30):
    obs = torch.randn(64, 4)
    batch = {"obs": obs, "actions": torch.tanh(obs[:, :2]), "rewards": -(obs ** 2).sum(-1)}
    learner.update(batch)
    if it % 10 == 0 or it == 29:
        alpha_prime = learner._log_cql_alpha["default_policy"].exp().item()
        print(f"iter {it}: cql_alpha {alpha_prime:.6f}")  # <- symptom
