import torch
import torch.nn.functional as F

torch.manual_seed(0)
w = torch.randn(4, 3, requires_grad=True)
w_unit = F.normalize(w, dim=1)
x = torch.randn(8, 3)
loss = (x @ w_unit.t()).pow(2).mean()
loss.backward()
print(w.grad)
