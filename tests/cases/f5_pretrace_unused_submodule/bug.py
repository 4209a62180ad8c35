"""A notebook model built in an earlier cell: the traced step never calls one of its layers."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.dropout_proj = nn.Linear(8, 8)  # <- unused_parameter
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def setup():
    torch.manual_seed(0)
    model = Net()
    return model, torch.optim.Adam(model.parameters(), lr=1e-2)


def step(model, opt):
    x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
    for _ in range(2):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
