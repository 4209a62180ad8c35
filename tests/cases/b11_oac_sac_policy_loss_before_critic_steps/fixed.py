"""The fixed twin: the policy loss is computed after the Q-network steps (microsoft/oac-explore#27)."""
import torch
from torch import nn

torch.manual_seed(0)
obs_dim, act_dim, alpha = 6, 2, 0.2
policy = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, act_dim), nn.Tanh())
qf1 = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
qf2 = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
policy_optimizer = torch.optim.Adam(policy.parameters(), lr=3e-4)
qf1_optimizer = torch.optim.Adam(qf1.parameters(), lr=3e-4)
qf2_optimizer = torch.optim.Adam(qf2.parameters(), lr=3e-4)
obs, actions, q_target = torch.randn(64, obs_dim), torch.rand(64, act_dim) * 2 - 1, torch.randn(64, 1)
for it in range(2):
    new_obs_actions = policy(obs)
    log_pi = -(new_obs_actions ** 2).sum(dim=1, keepdim=True)
    qf1_loss = ((qf1(torch.cat([obs, actions], 1)) - q_target) ** 2).mean()
    qf2_loss = ((qf2(torch.cat([obs, actions], 1)) - q_target) ** 2).mean()
    qf1_optimizer.zero_grad()
    qf1_loss.backward()
    qf1_optimizer.step()
    qf2_optimizer.zero_grad()
    qf2_loss.backward()
    qf2_optimizer.step()
    q_new_actions = torch.min(qf1(torch.cat([obs, new_obs_actions], 1)), qf2(torch.cat([obs, new_obs_actions], 1)))
    policy_loss = (alpha * log_pi - q_new_actions).mean()
    policy_optimizer.zero_grad()
    policy_loss.backward()
    policy_optimizer.step()
    print(f"iteration {it}: policy loss {policy_loss.item():.4f}")
