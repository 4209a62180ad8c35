"""Accuracy used as the loss: argmax has no gradient, so backward raises."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
pred = model(x).argmax(dim=1)  # <- non_differentiable
loss = 1.0 - (pred == y).float().mean()
loss.backward()
opt.step()
