import torch

a = torch.tensor([100.0, -1.0], requires_grad=True)
opt = torch.optim.SGD([a], lr=0.1)
b = torch.where(a <= 0, torch.exp(a), 1 + a)  # <- nan
b.sum().backward()
print(a.grad)
opt.step()
