"""sigmoid saves its output; `+= ` on that output breaks its backward (discuss.pytorch.org #169583)."""
import torch

torch.manual_seed(0)
t = torch.arange(3.0, requires_grad=True)
u = torch.sigmoid(2 * t)
u += 1  # <- inplace_saved
loss = u.sum()
loss.backward()  # <- symptom
