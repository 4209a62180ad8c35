"""A gradient cut by .item(): w never gets a gradient (the tracer reports kind `item` at the .item() line)."""
import torch

w = torch.randn(3, requires_grad=True)
x = w.sum().item()
loss = torch.tensor(x, requires_grad=True) * 2
loss.backward()
print(w.grad)
