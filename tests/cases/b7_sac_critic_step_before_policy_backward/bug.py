"""SAC in SPiRL after adding a new environment (clvrai/spirl#15): the policy loss is computed with the critic, then
the critic update's optimizer.step() changes the critic weights in place before policy_loss.backward(), which
raises "one of the variables needed for gradient computation has been modified by an inplace operation"."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
obs_dim, act_dim = 6, 2
policy = nn.Sequential(nn.Linear(obs_dim, 32), nn.ReLU(), nn.Linear(32, 2 * act_dim))
critic = nn.Sequential(nn.Linear(obs_dim + act_dim, 32), nn.ReLU(), nn.Linear(32, 1))
policy_opt = torch.optim.Adam(policy.parameters(), lr=3e-4)
critic_opt = torch.optim.Adam(critic.parameters(), lr=3e-4)
alpha = 0.2


def perform_update(loss, opt):
    opt.zero_grad()
    loss.backward()
    opt.step()


for step in range(3):
    obs, act, rew = torch.randn(16, obs_dim), torch.randn(16, act_dim), torch.randn(16, 1)
    mu, log_std = policy(obs).chunk(2, -1)
    dist = torch.distributions.Normal(mu, log_std.clamp(-5, 2).exp())
    new_act = dist.rsample()
    q_new = critic(torch.cat([obs, new_act], -1))
    policy_loss = (alpha * dist.log_prob(new_act).sum(-1, keepdim=True) - q_new).mean()
    critic_loss = F.mse_loss(critic(torch.cat([obs, act], -1)), rew)
    perform_update(critic_loss, critic_opt)  # <- inplace_saved
    perform_update(policy_loss, policy_opt)
    print(f"step {step}: policy {policy_loss.item():.4f} critic {critic_loss.item():.4f}")
