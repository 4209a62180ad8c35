"""TSAN (Jee-King/TSAN#3): in the model's forward `out = x` only names the same tensor, so the slice assignment
that rescales part of `out` writes into x, which the sigmoid saved for backward; backward raises "one of the
variables needed for gradient computation has been modified by an inplace operation" (fix: out = x.clone())."""
import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.conv = nn.Conv2d(3, c, 3, padding=1)
        self.scale = nn.Parameter(torch.ones(1, c // 2, 1, 1))
        self.head = nn.Linear(c, 2)

    def forward(self, x):
        x = torch.sigmoid(self.conv(x))
        out = x  # <- inplace_saved
        out[:, : out.shape[1] // 2] = x[:, : x.shape[1] // 2] * self.scale
        return self.head(out.mean((2, 3)))


torch.manual_seed(0)
model = Block()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 2, (8,))
for step in range(5):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
