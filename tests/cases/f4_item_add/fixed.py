import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 2)
out = model(x)
mse = nn.functional.mse_loss(out, y)
l1 = out.abs().mean()
loss = mse + 0.1 * l1
print("loss", mse.item() + 0.1 * l1.item())
opt.zero_grad()
loss.backward()
opt.step()
