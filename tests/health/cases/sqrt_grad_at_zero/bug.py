import torch

a = torch.FloatTensor([0.0, 1.0])
a.requires_grad = True
b = torch.sqrt(a)  # <- nan
b.sum().backward()
print("a grad", a.grad)
