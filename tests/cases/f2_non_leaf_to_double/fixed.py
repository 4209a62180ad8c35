import torch

torch.manual_seed(0)
x = torch.randn(5, dtype=torch.float64, requires_grad=True)
y = (x ** 2).sum()
y.backward()
print(x.grad)
