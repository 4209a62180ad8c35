"""Changing the network structure during training (pytorch/pytorch#54765): the optimizer is built for the first
network, then the name is rebound to a second network and training goes on with the old optimizer; the new network
gets gradients but the optimizer "doesn't know anything about the new net's parameters", so nothing is updated."""
import torch
import torch.nn.functional as F
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


class Net2(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(4, 16), nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
net1 = Net()
optimizer = torch.optim.Adam(net1.parameters(), lr=3e-2)
x, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
net1 = Net2()  # <- optimizer
for step in range(30):
    loss = F.cross_entropy(net1(x), y)
    optimizer.zero_grad()
    net1.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0 or step == 29:
        print(f"step {step}: loss {loss.item():.4f}")
