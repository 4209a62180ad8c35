"""Enhancing Transformers (thuanz123/enhancing-transformers#11,
https://github.com/thuanz123/enhancing-transformers/issues/11): ViT-VQGAN's ViTDecoder adds its positional
embedding in place, `token += self.de_pos_embedding`. With two decoders reading the same quantized tokens,
`rec_a = decoder_a(quant); rec_b = decoder_b(quant)`, backward raises "RuntimeError: one of the variables needed
for gradient computation has been modified by an inplace operation".
Why: `token` IS the caller's `quant`; decoder_a's first LayerNorm saved it for backward, then decoder_b's `+=`
wrote into it again, so the saved tensor's version no longer matches.
Fix (the reporter's suggestion, applied by the maintainer): `token = token + self.de_pos_embedding`."""
import torch
import torch.nn.functional as F
from torch import nn


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.norm(x))


class Attention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=8):
        super().__init__()
        self.heads, self.scale = heads, dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, heads * dim_head * 3, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in self.to_qkv(x).chunk(3, dim=-1))
        attn = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * self.scale, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, -1)
        return self.to_out(out)


class Transformer(nn.Module):
    def __init__(self, dim, depth, mlp_dim):
        super().__init__()
        self.layers = nn.ModuleList([nn.ModuleList([PreNorm(dim, Attention(dim)), PreNorm(dim, nn.Sequential(
            nn.Linear(dim, mlp_dim), nn.Tanh(), nn.Linear(mlp_dim, dim)))]) for _ in range(depth)])

    def forward(self, x):
        for attn, ff in self.layers:
            x = attn(x) + x
            x = ff(x) + x
        return x


class ViTDecoder(nn.Module):
    def __init__(self, num_patches, patch_dim, dim, depth=1, mlp_dim=32):
        super().__init__()
        self.transformer = Transformer(dim, depth, mlp_dim)
        self.de_pos_embedding = nn.Parameter(torch.randn(1, num_patches, dim) * 0.02, requires_grad=False)
        self.norm = nn.LayerNorm(dim)
        self.to_pixel = nn.Linear(dim, patch_dim)

    def forward(self, token):
        token += self.de_pos_embedding  # <- inplace_saved
        x = self.transformer(token)
        x = self.norm(x)
        return self.to_pixel(x)


class VectorQuantizer(nn.Module):
    def __init__(self, embed_dim, n_embed, beta=0.25):
        super().__init__()
        self.beta = beta
        self.embedding = nn.Embedding(n_embed, embed_dim)

    def forward(self, z):
        d = torch.cdist(z.reshape(-1, z.shape[-1]), self.embedding.weight)
        z_q = self.embedding(d.argmin(dim=1)).view(z.shape)
        loss = self.beta * F.mse_loss(z_q.detach(), z) + F.mse_loss(z_q, z.detach())
        z_q = z + (z_q - z).detach()  # straight-through estimator
        return z_q, loss


torch.manual_seed(0)
num_patches, patch_dim, dim = 4, 12, 16
encoder = nn.Linear(patch_dim, dim)
quantizer = VectorQuantizer(dim, 8)
decoder_a = ViTDecoder(num_patches, patch_dim, dim)
decoder_b = ViTDecoder(num_patches, patch_dim, dim)
params = [*encoder.parameters(), *quantizer.parameters(), *decoder_a.parameters(), *decoder_b.parameters()]
optimizer = torch.optim.Adam([p for p in params if p.requires_grad], lr=1e-3)
patches = torch.randn(2, num_patches, patch_dim)
for step in range(3):
    quant, q_loss = quantizer(encoder(patches))
    rec_a = decoder_a(quant)
    rec_b = decoder_b(quant)
    loss = F.mse_loss(rec_a, patches) + F.mse_loss(rec_b, patches) + q_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
