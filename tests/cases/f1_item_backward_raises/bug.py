"""The loss went through .item() and was rebuilt with torch.tensor(): backward raises "element 0 of
tensors does not require grad"."""
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
value = nn.functional.mse_loss(model(x), y).item()  # <- item
loss = torch.tensor(value)
opt.zero_grad()
loss.backward()
opt.step()
