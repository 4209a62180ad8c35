"""requires_grad set on creation, then the tensor is converted: the name now holds a non-leaf whose
.grad stays None (the same as `.cuda()` after requires_grad)."""
import torch

torch.manual_seed(0)
x = torch.randn(5, requires_grad=True).to(torch.float64)  # <- non_leaf_watched
y = (x ** 2).sum()
y.backward()
print(x.grad)  # <- symptom
