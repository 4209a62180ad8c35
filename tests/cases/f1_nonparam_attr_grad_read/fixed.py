import torch
from torch import nn


class Memory(nn.Module):
    def __init__(self, slots: int, dim: int) -> None:
        super().__init__()
        self.keys = nn.Parameter(torch.randn(slots, dim))
        self.proj = nn.Linear(dim, dim)

    def forward(self, q):
        return torch.softmax(self.proj(q) @ self.keys.t(), dim=-1) @ self.keys


torch.manual_seed(0)
model = Memory(8, 4)
out = model(torch.randn(2, 4))
out.pow(2).sum().backward()
print("keys grad:", model.keys.grad)
