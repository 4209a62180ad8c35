"""Backprop through argmax (pytorch/pytorch#1339): the first module's output goes through torch.max(...)[1] before the
second module, so the first module gets no gradient and reading its param.grad.data raises AttributeError."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
first_model = nn.Linear(6, 4)
second_model = nn.Linear(1, 3)
x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
y_p = first_model(x)
y_p = torch.max(y_p, 1)[1]  # <- non_differentiable
out = second_model(y_p.float().unsqueeze(1))
loss = F.cross_entropy(out, y)
first_model.zero_grad()
second_model.zero_grad()
loss.backward()
for param in second_model.parameters():
    print("second grad norm", param.grad.data.norm().item())
for param in first_model.parameters():
    print("first grad norm", param.grad.data.norm().item())
