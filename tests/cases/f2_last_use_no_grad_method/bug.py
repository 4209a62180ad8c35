"""Mixing weights computed from `alpha` under no_grad inside a method forward calls, and written into
another tensor's .data: alpha never learns (the L2C aggregation shape)."""
import torch
from torch import nn


class Mixer(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.alpha = nn.Parameter(torch.zeros(n))
        self.bank = nn.Parameter(torch.randn(n, 4))
        self.mixed = nn.Parameter(torch.zeros(4))

    def aggregate(self) -> None:
        with torch.no_grad():
            weights = torch.softmax(self.alpha, dim=0)  # <- no_grad
            self.mixed.data = weights @ self.bank

    def forward(self, x):
        self.aggregate()
        return x @ self.mixed


torch.manual_seed(0)
model = Mixer(3)
opt = torch.optim.Adam(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16)
snapshot = model.state_dict()
for _ in range(3):
    opt.zero_grad()
    ((model(x) - y) ** 2).mean().backward()
    opt.step()
