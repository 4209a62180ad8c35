"""A bias created in user code without a module, cut by .item() and never backpropagated: it is named `b`."""
import torch

torch.manual_seed(0)
b = torch.zeros(3, requires_grad=True)
x = torch.randn(5, 3)
shift = b.sum().item()  # <- item
out = torch.tensor(x.sum().item() + shift)
print("out", out, "b.grad", b.grad)  # <- symptom
