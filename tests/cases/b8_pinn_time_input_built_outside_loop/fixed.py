"""The fixed twin of pinn_time_input_built_outside_loop (https://github.com/pytorch/pytorch/issues/90158)."""
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
t = (1 + 3 * torch.rand(20, 1)).requires_grad_()
for step in range(5):
    loss = torch.mean(torch.square(net(x, t)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
