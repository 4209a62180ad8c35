"""The fixed twin: the gradient is read from the parametrization's original tensor, the leaf (lezcano/geotorch#44)."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import orthogonal

torch.manual_seed(0)
linear = orthogonal(nn.Linear(6, 6))
optimizer = torch.optim.Adam(linear.parameters(), lr=1e-2)
x = torch.randn(64, 6)
y = x @ torch.linalg.qr(torch.randn(6, 6))[0]
for step in range(30):
    loss = F.mse_loss(linear(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0 or step == 29:
        grad = linear.parametrizations.weight.original.grad
        print(f"step {step}: loss {loss.item():.4f}, weight grad is None: {grad is None}")
