"""Federated update: `old = model.state_dict().copy()` is shallow, so the update delta is zero."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 4), torch.randint(0, 2, (32,))
old = model.state_dict().copy()  # <- state_dict_alias
for _ in range(2):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
new = model.state_dict()
delta = {k: new[k] - old[k] for k in new}  # <- symptom
print({k: float(v.abs().sum()) for k, v in delta.items()})
