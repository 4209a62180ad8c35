"""rlkit SAC (rail-berkeley/rlkit#109, https://github.com/rail-berkeley/rlkit/pull/109): SACTrainer.train_from_torch
computes policy_loss from q_new_actions = min(qf1, qf2)(obs, new_obs_actions), then updates qf1 and qf2 first and
the policy last. The Q-function optimizers' step() changes the critic weights in place, and those weights were
saved for policy_loss's backward, so since PyTorch 1.5 policy_loss.backward() raises "one of the variables needed
for gradient computation has been modified by an inplace operation". The merged fix optimizes the policy before
the Q-functions."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
obs_dim, action_dim = 5, 2


def mlp(i, o):
    return nn.Sequential(nn.Linear(i, 32), nn.ReLU(), nn.Linear(32, o))


class TanhGaussianPolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = mlp(obs_dim, 2 * action_dim)

    def forward(self, obs):
        mean, log_std = self.net(obs).chunk(2, -1)
        dist = torch.distributions.Normal(mean, log_std.clamp(-20, 2).exp())
        pre_tanh = dist.rsample()
        action = torch.tanh(pre_tanh)
        log_pi = (dist.log_prob(pre_tanh) - torch.log(1 - action.pow(2) + 1e-6)).sum(-1, keepdim=True)
        return action, log_pi


class SACTrainer:
    def __init__(self, policy, qf1, qf2, target_qf1, target_qf2, discount=0.99, lr=3e-4):
        self.policy, self.qf1, self.qf2 = policy, qf1, qf2
        self.target_qf1, self.target_qf2 = target_qf1, target_qf2
        self.discount = discount
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.policy_optimizer = torch.optim.Adam(policy.parameters(), lr=lr)
        self.qf1_optimizer = torch.optim.Adam(qf1.parameters(), lr=lr)
        self.qf2_optimizer = torch.optim.Adam(qf2.parameters(), lr=lr)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=lr)

    def train_from_torch(self, batch):
        obs, actions, rewards, terminals, next_obs = batch
        new_obs_actions, log_pi = self.policy(obs)
        alpha_loss = -(self.log_alpha * (log_pi + (-action_dim)).detach()).mean()
        self.alpha_optimizer.zero_grad()
        alpha_loss.backward()
        self.alpha_optimizer.step()
        alpha = self.log_alpha.exp().detach()
        q_new_actions = torch.min(self.qf1(torch.cat([obs, new_obs_actions], 1)),
                                  self.qf2(torch.cat([obs, new_obs_actions], 1)))
        policy_loss = (alpha * log_pi - q_new_actions).mean()

        q1_pred = self.qf1(torch.cat([obs, actions], 1))
        q2_pred = self.qf2(torch.cat([obs, actions], 1))
        with torch.no_grad():
            new_next_actions, new_log_pi = self.policy(next_obs)
            target_q = torch.min(self.target_qf1(torch.cat([next_obs, new_next_actions], 1)),
                                 self.target_qf2(torch.cat([next_obs, new_next_actions], 1))) - alpha * new_log_pi
            q_target = rewards + (1.0 - terminals) * self.discount * target_q
        qf1_loss = F.mse_loss(q1_pred, q_target)
        qf2_loss = F.mse_loss(q2_pred, q_target)

        self.qf1_optimizer.zero_grad()
        qf1_loss.backward()
        self.qf1_optimizer.step()  # <- inplace_saved
        self.qf2_optimizer.zero_grad()
        qf2_loss.backward()
        self.qf2_optimizer.step()
        self.policy_optimizer.zero_grad()
        policy_loss.backward()
        self.policy_optimizer.step()
        return policy_loss.item(), qf1_loss.item()


trainer = SACTrainer(TanhGaussianPolicy(), mlp(obs_dim + action_dim, 1), mlp(obs_dim + action_dim, 1),
                     mlp(obs_dim + action_dim, 1), mlp(obs_dim + action_dim, 1))
for step in range(3):
    batch = (torch.randn(32, obs_dim), torch.rand(32, action_dim) * 2 - 1, torch.randn(32, 1),
             torch.zeros(32, 1), torch.randn(32, obs_dim))
    pl, ql = trainer.train_from_torch(batch)
    print(f"step {step}: policy loss {pl:.4f} qf1 loss {ql:.4f}")
