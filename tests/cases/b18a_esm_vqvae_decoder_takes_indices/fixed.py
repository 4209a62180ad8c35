"""ESM3 (evolutionaryscale/esm, Biohub/esm): structure VQ-VAE decoder fed only the token indices.

Source: https://github.com/Biohub/esm/issues/92 ("Question regarding VQ-VAE optimization")

What the user saw: the structure encoder returns (z_q, min_encoding_indices), where z_q carries the
straight-through gradient, but the structure token decoder only takes the integer structure tokens.
Training encoder + codebook + decoder by passing only the indices to the decoder, the reconstruction
loss does not populate gradients for the encoder parameters (only the commitment loss reaches them).

Why: the indices come from argmin over codebook distances; integer tokens carry no gradient, so the
straight-through estimator z_q = z + (quantized - z).detach() is bypassed and the reconstruction loss
never reaches the encoder (the decoder re-embeds the tokens with its own embedding table).

Fix: feed the decoder the straight-through embeddings z_q (not re-embedded indices) during training.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Codebook(nn.Module):
    def __init__(self, n_codes=16, dim=8):
        super().__init__()
        self.embeddings = nn.Parameter(torch.randn(n_codes, dim))

    def forward(self, z):
        dist = torch.cdist(z, self.embeddings)
        min_encoding_indices = dist.argmin(-1)
        quantized = self.embeddings[min_encoding_indices]
        commitment_loss = F.mse_loss(quantized, z.detach()) + 0.25 * F.mse_loss(z, quantized.detach())
        z_q = z + (quantized - z).detach()
        return z_q, min_encoding_indices, commitment_loss


class StructureTokenEncoder(nn.Module):
    def __init__(self, d_in=12, dim=8):
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(d_in, 32), nn.ReLU(), nn.Linear(32, dim))
        self.codebook = Codebook(dim=dim)

    def forward(self, coords):
        return self.codebook(self.proj(coords))


class StructureTokenDecoder(nn.Module):
    def __init__(self, n_codes=16, dim=8, d_out=12):
        super().__init__()
        self.embed = nn.Embedding(n_codes, dim)
        self.head = nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Linear(32, d_out))

    def decode(self, structure_tokens=None, z_q=None):
        x = self.embed(structure_tokens) if z_q is None else z_q
        return self.head(x)


encoder, decoder = StructureTokenEncoder(), StructureTokenDecoder()
opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr=3e-3)
coords = torch.randn(4, 10, 12)
for step in range(5):
    z_q, tokens, commitment_loss = encoder(coords)
    recon = decoder.decode(z_q=z_q)
    loss = F.mse_loss(recon, coords) + commitment_loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
w = encoder.proj[0].weight
print("encoder first layer grad:", None if w.grad is None else w.grad.abs().sum().item())
