"""An orthogonal linear layer (lezcano/geotorch#44): after torch.nn.utils.parametrizations.orthogonal (or
geotorch.orthogonal) `linear.weight` is recomputed from linear.parametrizations.weight.original on every access, a
non-leaf, so linear.weight.grad is None after backward and the layer looks untrained; the gradient is on
.parametrizations.weight.original, which is what the optimizer updates."""
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
        grad = linear.weight.grad  # <- non_leaf_watched
        print(f"step {step}: loss {loss.item():.4f}, weight grad is None: {grad is None}")
