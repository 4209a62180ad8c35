"""A leaf made grad-requiring after creation (`a.requires_grad = True`), then used through .detach()."""
import torch

a = torch.tensor(0.3)
a.requires_grad = True
b = torch.tensor(0.7).requires_grad_()
target = torch.tensor(1.0)
for _ in range(3):
    loss = (a.detach() * b - target) ** 2  # <- detach
    loss.backward()
print(a.grad, b.grad)  # <- symptom
