"""The fixed twin of argmax_between_two_modules (https://github.com/pytorch/pytorch/issues/1339)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
first_model = nn.Linear(6, 4)
second_model = nn.Linear(1, 3)
x, y = torch.randn(16, 6), torch.randint(0, 3, (16,))
y_p = first_model(x)
y_p = (y_p.softmax(1) * torch.arange(4.0)).sum(1)
out = second_model(y_p.float().unsqueeze(1))
loss = F.cross_entropy(out, y)
first_model.zero_grad()
second_model.zero_grad()
loss.backward()
for param in second_model.parameters():
    print("second grad norm", param.grad.data.norm().item())
for param in first_model.parameters():
    print("first grad norm", param.grad.data.norm().item())
