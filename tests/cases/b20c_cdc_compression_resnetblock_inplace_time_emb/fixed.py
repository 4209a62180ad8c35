"""CDC_compression (buggyyang/CDC_compression#1, https://github.com/buggyyang/CDC_compression/issues/1): training
the conditional diffusion compression model on one's own data stops at loss.backward() with "RuntimeError: one of
the variables needed for gradient computation has been modified by an inplace operation".
Why: modules/network_components.py, ResnetBlock.forward adds the time embedding with `h += ...`; h is the output
of block1's ReLU, which autograd saved for ReLU's backward, so the in-place add invalidates it.
Fix (the reporter's, acknowledged by the author): write `h = h + ...` instead of `h += ...`."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def exists(x):
    return x is not None


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        half_dim = self.dim // 2
        emb = math.log(10000) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim, device=x.device) * -emb)
        emb = x[:, None] * emb[None, :]
        return torch.cat((emb.sin(), emb.cos()), dim=-1)


class LayerNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.g = nn.Parameter(torch.ones(1, dim, 1, 1))
        self.b = nn.Parameter(torch.zeros(1, dim, 1, 1))

    def forward(self, x):
        var = torch.var(x, dim=1, unbiased=False, keepdim=True)
        mean = torch.mean(x, dim=1, keepdim=True)
        return (x - mean) / (var + self.eps).sqrt() * self.g + self.b


class Block(nn.Module):
    def __init__(self, dim, dim_out, large=False):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim_out, 7 if large else 3, padding=3 if large else 1), LayerNorm(dim_out), nn.ReLU()
        )

    def forward(self, x):
        return self.block(x)


class ResnetBlock(nn.Module):
    def __init__(self, dim, dim_out, time_emb_dim=None, large=False):
        super().__init__()
        self.mlp = (
            nn.Sequential(nn.LeakyReLU(0.2), nn.Linear(time_emb_dim, dim_out))
            if exists(time_emb_dim)
            else None
        )

        self.block1 = Block(dim, dim_out, large)
        self.block2 = Block(dim_out, dim_out)
        self.res_conv = nn.Conv2d(dim, dim_out, 1) if dim != dim_out else nn.Identity()

    def forward(self, x, time_emb=None):
        h = self.block1(x)

        if exists(time_emb):
            h = h + self.mlp(time_emb)[:, :, None, None]

        h = self.block2(h)
        return h + self.res_conv(x)


class Unet(nn.Module):
    """The denoising network in short: time MLP, one ResnetBlock conditioned on time, output conv."""

    def __init__(self, dim=8, channels=3):
        super().__init__()
        self.time_mlp = nn.Sequential(SinusoidalPosEmb(dim), nn.Linear(dim, dim * 4), nn.GELU(), nn.Linear(dim * 4, dim))
        self.block = ResnetBlock(channels, dim, time_emb_dim=dim)
        self.final_conv = nn.Conv2d(dim, channels, 1)

    def forward(self, x, time):
        t = self.time_mlp(time)
        return self.final_conv(self.block(x, t))


torch.manual_seed(0)
denoise_fn = Unet()
optimizer = torch.optim.Adam(denoise_fn.parameters(), lr=1e-3)
betas = torch.linspace(1e-4, 0.02, 100)
alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
for step in range(3):
    x_start = torch.randn(4, 3, 8, 8)
    t = torch.randint(0, 100, (4,))
    noise = torch.randn_like(x_start)
    a = alphas_cumprod[t][:, None, None, None]
    x_noisy = a.sqrt() * x_start + (1 - a).sqrt() * noise
    loss = F.mse_loss(denoise_fn(x_noisy, t.float()), noise)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")
