"""An RQ-VAE for generative recommendation (EdoardoBotta/RQ-VAE-Recommender#24): with the straight-through
estimator each quantize layer returns x + (emb - x).detach(), and the RQ-VAE loss ||sg(r) - e||^2 + b||r - sg(e)||^2
is computed on those returned embeddings; the codebook lookup only appears inside the .detach(), so every
layer's codebook (layers.i.embedding.weight) keeps a None gradient and never moves while the other parameters
train (the fix passes the codebook embeddings themselves to the loss)."""
import torch
import torch.nn.functional as F
from torch import nn


class Quantize(nn.Module):
    def __init__(self, dim, n_codes):
        super().__init__()
        self.embedding = nn.Embedding(n_codes, dim)

    def forward(self, x):
        ids = torch.cdist(x, self.embedding.weight).argmin(dim=1)
        emb = self.embedding(ids)
        return x + (emb - x).detach(), emb


class RqVae(nn.Module):
    def __init__(self, in_dim=24, dim=8, n_layers=3, n_codes=16, beta=0.25):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(in_dim, 32), nn.ReLU(), nn.Linear(32, dim))
        self.layers = nn.ModuleList(Quantize(dim, n_codes) for _ in range(n_layers))
        self.decoder = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, in_dim))
        self.beta = beta

    def rqvae_loss(self, residuals, embs):
        return ((residuals.detach() - embs) ** 2 + self.beta * (residuals - embs.detach()) ** 2).sum(-1).mean()

    def forward(self, x):
        res = self.encoder(x)
        st_embs, codes, residuals = [], [], []
        for layer in self.layers:
            residuals.append(res)
            st, emb = layer(res)
            st_embs.append(st)
            codes.append(emb)
            res = res - st
        embs, codes, residuals = torch.stack(st_embs, -1), torch.stack(codes, -1), torch.stack(residuals, -1)
        x_hat = self.decoder(embs.sum(-1))
        rqvae_loss = self.rqvae_loss(residuals, embs)  # <- detach
        return F.mse_loss(x_hat, x) + rqvae_loss


torch.manual_seed(0)
model = RqVae()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
items = torch.randn(128, 24)
codebook_before = model.layers[0].embedding.weight.detach().clone()
for step in range(20):
    loss = model(items)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
for name, weight in model.named_parameters():
    if "embedding" in name:
        print(name, "grad:", None if weight.grad is None else f"{weight.grad.norm():.4f}")
print(f"loss {loss.item():.4f}; codebook 0 changed: {not torch.equal(model.layers[0].embedding.weight, codebook_before)}")
