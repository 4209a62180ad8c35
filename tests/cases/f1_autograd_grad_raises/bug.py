"""A physics-informed loss computed through NumPy: torch.autograd.grad raises "does not require grad"."""
import numpy as np
import torch

torch.manual_seed(0)
w = torch.randn(3, requires_grad=True)
t = torch.linspace(0, 1, 10)
u = (w[0] + w[1] * t + w[2] * t ** 2)
residual = np.gradient(u.detach().numpy(), t.numpy())  # <- numpy
loss = torch.as_tensor(residual).pow(2).mean()
(grad,) = torch.autograd.grad(loss, w)
