"""The fixed twin: the latent is sampled with the reparameterization trick, so the reconstruction
term trains the encoder."""
import torch
import torch.nn.functional as F
from torch import nn


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 16)
        self.mu = nn.Linear(16, 2)
        self.logvar = nn.Linear(16, 2)
        self.dec = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 8))

    def forward(self, x):
        h = F.relu(self.enc(x))
        mu, logvar = self.mu(h), self.logvar(h)
        std = torch.exp(0.5 * logvar)
        z = mu + std * torch.randn_like(std)
        return self.dec(z), mu, logvar


torch.manual_seed(0)
model = VAE()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(32, 8)
for epoch in range(3):
    recon, mu, logvar = model(x)
    recon_loss = F.mse_loss(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    loss = recon_loss + kld
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: recon {recon_loss.item():.3f} kld {kld.item():.3f}")
