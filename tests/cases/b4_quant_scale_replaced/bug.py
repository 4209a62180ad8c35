"""Quantizer range initialisation after the optimizer got the parameters
(openvinotoolkit/nncf#327): init replaces the scale Parameter as a whole, so the optimizer keeps
updating the old one and the scale the model uses gets gradients but never changes."""
import torch
from torch import nn
import torch.nn.functional as F


class SymmetricQuantizer(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(1))

    def init_range(self, stats):
        self.scale = nn.Parameter(stats.abs().max().reshape(1) / 7)  # <- no_update

    def forward(self, x):
        q = x / self.scale
        q = q + (q.round().clamp(-8, 7) - q).detach()
        return q * self.scale


torch.manual_seed(0)
fc, quantizer, head = nn.Linear(6, 6), SymmetricQuantizer(), nn.Linear(6, 2)
model = nn.Sequential(fc, quantizer, head)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(32, 6), torch.randn(32, 2)
with torch.no_grad():
    quantizer.init_range(fc(x))
before = quantizer.scale.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f} scale grad {quantizer.scale.grad.item():.5f}")
print("scale changed:", not torch.equal(before, quantizer.scale))
