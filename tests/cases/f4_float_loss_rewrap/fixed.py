import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 3), torch.randn(16, 1)
for _ in range(3):
    loss = nn.functional.mse_loss(model(x), y)
    print(float(loss))
    opt.zero_grad()
    loss.backward()
    opt.step()
