"""The fixed twin: the shared VAE's optimizer gets the decoder's parameters too (zdebruine/MMVAE#39)."""
import torch
import torch.nn.functional as F
from torch import nn


class SharedVAE(nn.Module):
    def __init__(self, d=32, latent=8):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, 32), nn.ReLU(), nn.Linear(32, d))

    def forward(self, x):
        mu, logvar = self.encoder(x).chunk(2, dim=-1)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp()
        kl = -0.5 * (1 + logvar - mu ** 2 - logvar.exp()).sum(-1).mean()
        return self.decoder(z), kl


class MMVAE(nn.Module):
    def __init__(self, genes=(50, 40)):
        super().__init__()
        self.expert_encoders = nn.ModuleList(nn.Linear(g, 32) for g in genes)
        self.expert_decoders = nn.ModuleList(nn.Linear(32, g) for g in genes)
        self.shared_vae = SharedVAE()

    def forward(self, x, modality):
        h, kl = self.shared_vae(self.expert_encoders[modality](x))
        return self.expert_decoders[modality](h), kl


torch.manual_seed(0)
model = MMVAE()
expert_optimizer = torch.optim.Adam([*model.expert_encoders.parameters(), *model.expert_decoders.parameters()], lr=1e-2)
shared_optimizer = torch.optim.Adam(model.shared_vae.parameters(), lr=1e-2)
cells = [torch.randn(64, 50), torch.randn(64, 40)]
decoder_before = model.shared_vae.decoder[0].weight.detach().clone()
for step in range(10):
    for modality, x in enumerate(cells):
        x_hat, kl = model(x, modality)
        loss = F.mse_loss(x_hat, x) + 1e-3 * kl
        expert_optimizer.zero_grad()
        shared_optimizer.zero_grad()
        loss.backward()
        expert_optimizer.step()
        shared_optimizer.step()
print(f"loss {loss.item():.4f}; shared decoder grad set: {model.shared_vae.decoder[0].weight.grad is not None}; "
      f"shared decoder changed: {not torch.equal(model.shared_vae.decoder[0].weight, decoder_before)}")
