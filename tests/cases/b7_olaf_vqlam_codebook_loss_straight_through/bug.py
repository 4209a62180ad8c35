"""The VQ latent action model of Olaf-World (showlab/Olaf-World#8): the quantizer returns the straight-through
output z_q = x + (z - x).detach() and the codebook loss is computed on it, mse(z_q, z_e.detach()); the codebook
lookup z appears only inside .detach(), so the codebook loss never reaches the codebook, which stays at its
initialization while the reconstruction loss still goes down."""
import torch
import torch.nn.functional as F
from torch import nn


class VectorQuantizer(nn.Module):
    def __init__(self, num_codes=8, dim=4):
        super().__init__()
        self.codebook = nn.Embedding(num_codes, dim)

    def forward(self, x):
        indices = torch.cdist(x, self.codebook.weight).argmin(-1)
        z = self.codebook(indices)
        z_q = x + (z - x).detach()
        return z_q, z, x, indices


class VQLatentActionModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        self.vq = VectorQuantizer()
        self.decoder = nn.Sequential(nn.Linear(4 + 8, 32), nn.ReLU(), nn.Linear(32, 8))

    def forward(self, frames, prev):
        z_e = self.encoder(frames)
        z_q, _, _, _ = self.vq(z_e)
        recon = self.decoder(torch.cat([z_q, prev], -1))
        codebook_loss = F.mse_loss(z_q, z_e.detach())  # <- cut_term
        commitment_loss = F.mse_loss(z_e, z_q.detach())
        return recon, codebook_loss, commitment_loss


torch.manual_seed(0)
model = VQLatentActionModel()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
frames, prev, target = torch.randn(64, 16), torch.randn(64, 8), torch.randn(64, 8)
codebook_before = model.vq.codebook.weight.detach().clone()
for step in range(20):
    recon, codebook_loss, commitment_loss = model(frames, prev)
    loss = F.mse_loss(recon, target) + codebook_loss + 0.25 * commitment_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; codebook changed: {not torch.equal(codebook_before, model.vq.codebook.weight)}")
