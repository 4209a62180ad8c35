"""The fixed twin: the self-conditioning pass runs under torch.no_grad() (lucidrains/denoising-diffusion-
pytorch#286)."""
import random

import torch
import torch.nn.functional as F
from torch import nn


class Denoiser(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.inp, self.cond = nn.Linear(d, 32), nn.Linear(d, 32)
        self.out = nn.Linear(32, d)

    def forward(self, x, x_self_cond=None):
        if x_self_cond is None:
            x_self_cond = torch.zeros_like(x)
        return self.out(torch.relu(self.inp(x) + self.cond(x_self_cond)))


random.seed(0)
torch.manual_seed(0)
model = Denoiser()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x_start = torch.randn(32, 16)
for step in range(6):
    noise = torch.randn_like(x_start)
    x = 0.8 * x_start + 0.6 * noise
    x_self_cond = None
    if random.random() < 0.5:
        with torch.no_grad():
            x_self_cond = model(x.clone().detach())
            x_self_cond = x_self_cond.detach_()
    loss = F.mse_loss(model(x, x_self_cond), x_start)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
