import torch

a = torch.FloatTensor([0.0, 1.0])
a.requires_grad = True
b = torch.sqrt(a + 1e-4)
b.sum().backward()
print("a grad", a.grad)
