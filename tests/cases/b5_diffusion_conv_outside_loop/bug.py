"""Training lucidrains' 1D denoising diffusion on data first mapped by a Conv1d outside the training
loop (lucidrains/denoising-diffusion-pytorch#109): the mapped tensor keeps the conv's graph, the first
backward frees it, and the second step raises "Trying to backward through the graph a second time"."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class Unet1D(nn.Module):
    def __init__(self, dim=8, channels=1):
        super().__init__()
        self.time_mlp = nn.Sequential(nn.Linear(1, dim), nn.GELU())
        self.init_conv = nn.Conv1d(channels, dim, 7, padding=3)
        self.final_conv = nn.Conv1d(dim, channels, 1)

    def forward(self, x, time):
        h = self.init_conv(x) + self.time_mlp(time.float().unsqueeze(-1) / 1000).unsqueeze(-1)
        return self.final_conv(F.silu(h))


class GaussianDiffusion1D(nn.Module):
    def __init__(self, model, seq_length, timesteps=100):
        super().__init__()
        self.model, self.seq_length, self.num_timesteps = model, seq_length, timesteps
        betas = torch.linspace(1e-4, 0.02, timesteps)
        alphas_cumprod = torch.cumprod(1 - betas, dim=0)
        self.register_buffer("sqrt_alphas_cumprod", alphas_cumprod.sqrt())
        self.register_buffer("sqrt_one_minus_alphas_cumprod", (1 - alphas_cumprod).sqrt())

    def forward(self, img):
        b = img.shape[0]
        t = torch.randint(0, self.num_timesteps, (b,)).long()
        noise = torch.randn_like(img)
        x = self.sqrt_alphas_cumprod[t].view(b, 1, 1) * img + self.sqrt_one_minus_alphas_cumprod[t].view(b, 1, 1) * noise
        return F.mse_loss(self.model(x, t), noise)


torch.manual_seed(0)
raw_series = torch.sin(torch.linspace(0, 4 * math.pi, 32)) * torch.rand(8, 5, 1)
to_channels = nn.Conv1d(5, 1, 1)
training_seq = to_channels(raw_series)  # <- autograd_error
model = Unet1D(dim=8, channels=1)
diffusion = GaussianDiffusion1D(model, seq_length=32, timesteps=100)
optimizer = torch.optim.Adam(diffusion.parameters(), lr=8e-5)
for step in range(3):
    loss = diffusion(training_seq)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"step {step}: loss {loss.item():.4f}")
