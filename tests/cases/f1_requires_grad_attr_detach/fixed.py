import torch

a = torch.tensor(0.3)
a.requires_grad = True
b = torch.tensor(0.7).requires_grad_()
target = torch.tensor(1.0)
for _ in range(3):
    loss = (a * b - target) ** 2
    loss.backward()
print(a.grad, b.grad)
