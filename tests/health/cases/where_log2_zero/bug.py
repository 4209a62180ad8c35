import torch

x1 = torch.tensor([0.0, 2.0, 3.0], requires_grad=True)
y1 = torch.where(x1 > 2, torch.log2(x1), 2 * x1)  # <- nan
z1 = y1.sum()
z1.backward()
print("x1.grad =", x1.grad)
