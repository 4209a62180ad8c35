import torch

torch.manual_seed(0)
b = torch.zeros(3, requires_grad=True)
x = torch.randn(5, 3)
out = x.sum() + b.sum()
out.backward()
print("out", out.item(), "b.grad", b.grad)
