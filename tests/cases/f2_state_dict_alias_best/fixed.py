import copy

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=1.0)
x, y = torch.randn(32, 4), torch.randn(32, 1)
best_loss, best_state = float("inf"), None
for epoch in range(4):
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if loss.item() < best_loss:
        best_loss, best_state = loss.item(), copy.deepcopy(model.state_dict())
model.load_state_dict(best_state)
