"""The fixed twin: out = x.clone(), so the slice write leaves the saved sigmoid output alone (Jee-King/TSAN#3)."""
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
        out = x.clone()
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
