import torch

torch.manual_seed(0)
t = torch.arange(3.0, requires_grad=True)
u = torch.sigmoid(2 * t)
u = u + 1
loss = u.sum()
loss.backward()
