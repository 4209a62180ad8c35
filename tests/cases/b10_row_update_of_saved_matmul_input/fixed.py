"""The fixed twin: the row is incremented out of place with a one-hot column (www.yongfengli.tk, inplace operation in pytorch)."""
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.param = nn.Parameter(torch.randn(10, 10) * 0.1)

    def forward(self, a):
        y = 0
        b = torch.mm(self.param, a)
        for i in range(10):
            b = b + F.one_hot(torch.tensor(i), 10).float().unsqueeze(1)
            y = y + torch.mm(self.param, b)
        return y


torch.manual_seed(0)
net = Net()
optimizer = torch.optim.SGD(net.parameters(), lr=1e-3)
a, target = torch.randn(10, 1), torch.randn(10, 1)
for step in range(3):
    loss = F.mse_loss(net(a), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
