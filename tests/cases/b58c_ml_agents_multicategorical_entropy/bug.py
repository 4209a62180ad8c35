# [bug-fix] Fix entropy computation in MultiCategorialDistribution
# https://github.com/Unity-Technologies/ml-agents/pull/3607
# In mlagents/trainers/distributions.py, MultiCategoricalDistribution.__init__ called
# self._create_entropy(self._sampled_onehot, self._all_probs, ...) while the method's signature is
# _create_entropy(all_log_probs, sample_onehot, ...): the entropy was computed from the sampled one-hot
# action instead of the policy's log-probabilities, so it was constant and the PPO entropy bonus never
# sent any gradient to the policy branches. The PR swapped the arguments back.
# (ml-agents was TensorFlow at the time; the distribution and the PPO loss are rewritten in plain torch.)
from typing import List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

EPSILON = 1e-7


def softmax_cross_entropy_with_logits(labels: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    return -(labels * F.log_softmax(logits, dim=-1)).sum(dim=-1)


class MultiCategoricalDistribution(nn.Module):
    """A categorical distribution for multi-branched discrete actions, with action masking."""

    def __init__(self, hidden_size: int, act_size: List[int]):
        super().__init__()
        self.act_size = act_size
        self.policy_branches = nn.ModuleList(
            [nn.Linear(hidden_size, size, bias=False) for size in act_size]
        )

    def forward(self, logits: torch.Tensor, action_masks: torch.Tensor):
        unmasked_log_probs = self._create_policy_branches(logits)
        sampled_policy, all_probs, action_index = self._get_masked_actions_probs(
            unmasked_log_probs, action_masks
        )
        sampled_onehot = self._action_onehot(sampled_policy)
        entropy = self._create_entropy(sampled_onehot, all_probs, action_index)  # <- cut_term
        total_prob = self._get_log_probs(sampled_onehot, all_probs, action_index)
        return sampled_policy, total_prob, entropy

    def _create_policy_branches(self, logits: torch.Tensor) -> List[torch.Tensor]:
        return [branch(logits) for branch in self.policy_branches]

    def _get_masked_actions_probs(
        self, unmasked_log_probs: List[torch.Tensor], action_masks: torch.Tensor
    ) -> Tuple[torch.Tensor, torch.Tensor, List[int]]:
        action_idx = [0] + list(np.cumsum(self.act_size))
        outputs, log_probs = [], []
        for i, branch_logits in enumerate(unmasked_log_probs):
            mask = action_masks[:, action_idx[i]: action_idx[i + 1]]
            probs = F.softmax(branch_logits, dim=-1) * mask
            probs = probs / (probs.sum(dim=-1, keepdim=True) + EPSILON)
            outputs.append(torch.multinomial(probs, 1))
            log_probs.append(torch.log(probs + EPSILON))
        return torch.cat(outputs, dim=1), torch.cat(log_probs, dim=1), action_idx

    def _action_onehot(self, sample: torch.Tensor) -> torch.Tensor:
        return torch.cat(
            [F.one_hot(sample[:, i], self.act_size[i]).float() for i in range(len(self.act_size))],
            dim=1,
        )

    def _get_log_probs(self, sample_onehot, all_log_probs, action_idx) -> torch.Tensor:
        return torch.stack(
            [
                -softmax_cross_entropy_with_logits(
                    labels=sample_onehot[:, action_idx[i]: action_idx[i + 1]],
                    logits=all_log_probs[:, action_idx[i]: action_idx[i + 1]],
                )
                for i in range(len(self.act_size))
            ],
            dim=1,
        ).sum(dim=1, keepdim=True)

    def _create_entropy(self, all_log_probs, sample_onehot, action_idx) -> torch.Tensor:
        return torch.stack(
            [
                softmax_cross_entropy_with_logits(
                    labels=F.softmax(all_log_probs[:, action_idx[i]: action_idx[i + 1]], dim=-1),
                    logits=all_log_probs[:, action_idx[i]: action_idx[i + 1]],
                )
                for i in range(len(self.act_size))
            ],
            dim=1,
        ).sum(dim=1)


class PPOModel(nn.Module):
    def __init__(self, obs_size: int, hidden_size: int, act_size: List[int]):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(obs_size, hidden_size), nn.Tanh())
        self.distribution = MultiCategoricalDistribution(hidden_size, act_size)
        self.value_head = nn.Linear(hidden_size, 1)

    def forward(self, obs, action_masks):
        hidden = self.encoder(obs)
        action, log_probs, entropy = self.distribution(hidden, action_masks)
        return action, log_probs, entropy, self.value_head(hidden).squeeze(-1)


act_size = [3, 2]
model = PPOModel(obs_size=8, hidden_size=16, act_size=act_size)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-4)
beta, epsilon = 5e-3, 0.2

obs = torch.randn(64, 8)
action_masks = torch.ones(64, sum(act_size))
advantages = torch.randn(64)
returns = torch.randn(64)

for step in range(3):
    _, log_probs, entropy, values = model(obs, action_masks)
    old_log_probs = log_probs.detach()
    r_theta = torch.exp(log_probs.squeeze(-1) - old_log_probs.squeeze(-1))
    p_opt_a = r_theta * advantages
    p_opt_b = torch.clamp(r_theta, 1.0 - epsilon, 1.0 + epsilon) * advantages
    policy_loss = -torch.min(p_opt_a, p_opt_b).mean()
    value_loss = F.mse_loss(values, returns)
    loss = policy_loss + 0.5 * value_loss - beta * entropy.mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} entropy {entropy.mean().item():.6f}")
