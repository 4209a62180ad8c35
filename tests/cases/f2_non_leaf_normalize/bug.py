"""The weight is normalised by rebinding its name: `w.grad` is then read on the normalised copy."""
import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(4, 3, requires_grad=True)
w = F.normalize(w, dim=1)  # <- non_leaf_watched
x = torch.randn(8, 3)
loss = (x @ w.t()).pow(2).mean()
loss.backward()
print(w.grad)  # <- symptom
