"""The LEAF audio frontend in PyTorch (denfed/leaf-audio-pytorch#3): GaborConstraint clamps the Gabor kernel's
center frequencies and bandwidths inside `with torch.no_grad()` in forward, and the filters are built from the
clamped values, so the learnable kernel gets no gradient and the filterbank stays at its initialization."""
import math

import torch
from torch import nn


class GaborConstraint(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self._kernel_size = kernel_size

    def forward(self, kernel):
        mu_lower, mu_upper = 0.0, math.pi
        sigma_lower = 4 * math.sqrt(2 * math.log(2)) / math.pi
        sigma_upper = self._kernel_size * math.sqrt(2 * math.log(2)) / math.pi
        with torch.no_grad():
            clipped_mu = torch.clamp(kernel[:, 0], mu_lower, mu_upper)  # <- no_grad
            clipped_sigma = torch.clamp(kernel[:, 1], sigma_lower, sigma_upper)
        return torch.stack([clipped_mu, clipped_sigma], dim=1)


class GaborConv1D(nn.Module):
    def __init__(self, filters=8, kernel_size=33):
        super().__init__()
        mu = torch.linspace(0.1, 2.5, filters)
        sigma = torch.full((filters,), 4.0)
        self._kernel = nn.Parameter(torch.stack([mu, sigma], dim=1))
        self._constraint = GaborConstraint(kernel_size)
        self._kernel_size = kernel_size

    def forward(self, x):
        kernel = self._constraint(self._kernel)
        t = torch.arange(-(self._kernel_size // 2), self._kernel_size // 2 + 1, dtype=x.dtype)
        envelope = torch.exp(-0.5 * (t[None, :] / kernel[:, 1:2]) ** 2)
        filters = envelope * torch.cos(kernel[:, 0:1] * t[None, :])
        return torch.conv1d(x, filters.unsqueeze(1), padding=self._kernel_size // 2)


torch.manual_seed(0)
frontend = nn.Sequential(GaborConv1D(), nn.Conv1d(8, 1, 1))
optimizer = torch.optim.Adam(frontend.parameters(), lr=2e-3)
x = torch.rand(1, 1, 400)
kernel_before = frontend[0]._kernel.detach().clone()
for _ in range(20):
    loss = torch.norm(frontend(x) - torch.ones(1, 1, 400))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; Gabor kernel changed: {not torch.equal(kernel_before, frontend[0]._kernel)}")
