"""The fixed twin: the bottleneck samples with the reparameterisation trick, so the discriminator loss trains the
encoder, z_mu and sigma too (Unity-Technologies/ml-agents#5546)."""
import torch
from torch import nn


class DiscriminatorNetwork(nn.Module):
    def __init__(self, obs_size=6, act_size=2, hidden=16, z_size=8, beta=0.1, mutual_information=0.5):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(obs_size + act_size, hidden), nn.ReLU())
        self._z_sigma = nn.Parameter(torch.ones(z_size))
        self._z_mu_layer = nn.Linear(hidden, z_size)
        self._estimator = nn.Sequential(nn.Linear(z_size, 1), nn.Sigmoid())
        self._beta, self.mutual_information = beta, mutual_information

    def compute_estimate(self, obs, act, use_vail_noise=False):
        hidden = self.encoder(torch.cat([obs, act], -1))
        z_mu = self._z_mu_layer(hidden)
        hidden = z_mu + torch.randn_like(z_mu) * self._z_sigma * use_vail_noise
        return self._estimator(hidden), z_mu

    def compute_loss(self, policy_batch, expert_batch, eps=1e-7):
        expert_estimate, expert_mu = self.compute_estimate(*expert_batch, use_vail_noise=True)
        policy_estimate, policy_mu = self.compute_estimate(*policy_batch, use_vail_noise=True)
        discriminator_loss = -(torch.log(expert_estimate + eps) + torch.log(1.0 - policy_estimate + eps)).mean()
        kl_loss = torch.mean(-torch.sum(1 + (self._z_sigma ** 2).log() - 0.5 * expert_mu ** 2 - 0.5 * policy_mu ** 2
                                        - (self._z_sigma ** 2), dim=1))
        return discriminator_loss, discriminator_loss + self._beta * (kl_loss - self.mutual_information)


torch.manual_seed(0)
disc = DiscriminatorNetwork()
optimizer = torch.optim.Adam(disc.parameters(), lr=3e-4)
policy_batch, expert_batch = (torch.randn(32, 6), torch.randn(32, 2)), (torch.randn(32, 6) + 1, torch.randn(32, 2))
for step in range(3):
    optimizer.zero_grad()
    discriminator_loss, total_loss = disc.compute_loss(policy_batch, expert_batch)
    disc_grad = torch.autograd.grad(discriminator_loss, disc._z_mu_layer.weight, retain_graph=True)[0]
    total_loss.backward()
    optimizer.step()
    print(f"step {step}: discriminator loss's gradient on z_mu layer: {disc_grad.abs().max().item():.2e}")
