"""A PINN-style residual loss (pytorch/pytorch#90158): t = 1 + 3 * torch.rand(..., requires_grad=True) is built
once before the loop, so its small graph is freed by the first backward and the second raises "Trying to backward
through the graph a second time"."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x, t):
        return self.body(torch.cat([x, t], 1))


torch.manual_seed(0)
net = Net()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
x = torch.rand(20, 1)
t = 1 + 3 * torch.rand(20, 1, requires_grad=True)  # <- autograd_error
for step in range(5):
    loss = torch.mean(torch.square(net(x, t)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
