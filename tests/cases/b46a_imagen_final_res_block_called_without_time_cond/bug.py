# lucidrains/imagen-pytorch#75: the Unet builds `final_res_block` with `time_cond_dim`, so the block owns
# a `time_mlp` (SiLU -> Linear) that turns the time conditioning into a scale/shift. Unet.forward then
# calls the block without the time conditioning `t`; ResnetBlock.forward skips `time_mlp` when no
# time_emb is passed, so final_res_block.time_mlp.1.{weight,bias} never get a gradient (DDP reported
# them as "Parameters which did not receive grad").
import math

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def exists(v):
    return v is not None


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        half = self.dim // 2
        freqs = torch.exp(torch.arange(half) * -(math.log(10000) / (half - 1)))
        emb = x[:, None] * freqs[None, :]
        return torch.cat((emb.sin(), emb.cos()), dim=-1)


class Block(nn.Module):
    def __init__(self, dim, dim_out, groups=4):
        super().__init__()
        self.groupnorm = nn.GroupNorm(groups, dim)
        self.project = nn.Conv2d(dim, dim_out, 3, padding=1)

    def forward(self, x, scale_shift=None):
        x = self.groupnorm(x)
        if exists(scale_shift):
            scale, shift = scale_shift
            x = x * (scale + 1) + shift
        return self.project(F.silu(x))


class ResnetBlock(nn.Module):
    def __init__(self, dim, dim_out, *, time_cond_dim=None, groups=4):
        super().__init__()
        self.time_mlp = None
        if exists(time_cond_dim):
            self.time_mlp = nn.Sequential(nn.SiLU(), nn.Linear(time_cond_dim, dim_out * 2))
        self.block1 = Block(dim, dim_out, groups)
        self.block2 = Block(dim_out, dim_out, groups)
        self.res_conv = nn.Conv2d(dim, dim_out, 1) if dim != dim_out else nn.Identity()

    def forward(self, x, time_emb=None):
        scale_shift = None
        if exists(self.time_mlp) and exists(time_emb):
            time_emb = self.time_mlp(time_emb)[:, :, None, None]
            scale_shift = time_emb.chunk(2, dim=1)
        h = self.block1(x)
        h = self.block2(h, scale_shift=scale_shift)
        return h + self.res_conv(x)


class Unet(nn.Module):
    def __init__(self, dim=8, channels=3):
        super().__init__()
        time_cond_dim = dim * 4
        self.to_time_hiddens = nn.Sequential(SinusoidalPosEmb(dim), nn.Linear(dim, time_cond_dim), nn.SiLU())
        self.to_time_cond = nn.Sequential(nn.Linear(time_cond_dim, time_cond_dim))
        self.init_conv = nn.Conv2d(channels, dim, 7, padding=3)
        self.down = ResnetBlock(dim, dim * 2, time_cond_dim=time_cond_dim)
        self.mid_block = ResnetBlock(dim * 2, dim * 2, time_cond_dim=time_cond_dim)
        self.up = ResnetBlock(dim * 4, dim, time_cond_dim=time_cond_dim)
        self.final_res_block = ResnetBlock(dim, dim, time_cond_dim=time_cond_dim)
        self.final_conv = nn.Conv2d(dim, channels, 3, padding=1)

    def forward(self, x, time):
        x = self.init_conv(x)
        t = self.to_time_cond(self.to_time_hiddens(time * 1000))
        x = self.down(x, t)
        skip = x
        x = self.mid_block(x, t)
        x = self.up(torch.cat((x, skip), dim=1), t)
        x = self.final_res_block(x)  # <- unused_parameter
        return self.final_conv(x)


def log_snr_cosine(t):
    return -torch.log(torch.special.expm1(1e-4 + 10 * t ** 2))  # imagen's continuous-time schedule


unet = Unet()
optimizer = torch.optim.Adam(unet.parameters(), lr=1e-4)
images = torch.rand(4, 3, 16, 16) * 2 - 1

for step in range(3):
    times = torch.rand(images.shape[0])
    log_snr = log_snr_cosine(times)[:, None, None, None]
    alpha, sigma = torch.sqrt(torch.sigmoid(log_snr)), torch.sqrt(torch.sigmoid(-log_snr))
    noise = torch.randn_like(images)
    x_noisy = alpha * images + sigma * noise
    loss = F.mse_loss(unet(x_noisy, times), noise)
    optimizer.zero_grad()
    loss.backward()
    # what DDP's unused-parameter check reported, rank 0
    missing = [n for n, p in unet.named_parameters() if p.requires_grad and p.grad is None]  # <- symptom
    print(f"step {step} loss {loss.item():.4f} params which did not receive grad: {missing}")
    optimizer.step()
