import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
pred = model(x)
loss = ((pred - y) ** 2).mean()
if loss.requires_grad:
    loss.backward()
print("grad:", model.weight.grad)
