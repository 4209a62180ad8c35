import torch

xt = torch.tensor([-1.0, -4.0], dtype=torch.float32, requires_grad=True)
y = torch.where(xt > 0, torch.sqrt(xt.clamp_min(1e-12)), xt).sum()
y.backward()
print(xt.grad)
