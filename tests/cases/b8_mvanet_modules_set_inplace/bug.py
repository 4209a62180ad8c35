"""MVANet's constructor (qianyu-dlut/MVANet#2) walks its modules and sets inplace = True on every ReLU and Dropout;
the dropout after a ReLU then overwrites the ReLU output its backward saved, and backward raises "modified by an
inplace operation: ... output 0 of ReluBackward0"."""
import torch
import torch.nn.functional as F
from torch import nn


class MVANetLite(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(8, dim)
        self.ffn = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Dropout(0.1), nn.Linear(dim, 1))
        for m in self.modules():
            if isinstance(m, (nn.ReLU, nn.Dropout)):
                m.inplace = True  # <- inplace_saved

    def forward(self, x):
        return self.ffn(self.proj(x))


torch.manual_seed(0)
model = MVANetLite()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x, y = torch.randn(8, 8), torch.rand(8, 1)
for step in range(3):
    loss = F.binary_cross_entropy_with_logits(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
