"""Reparametrised layers: weight_norm and spectral_norm from torch.nn.utils.parametrizations, and a
custom constraint through torch.nn.utils.parametrize.register_parametrization (symmetric weights)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.parametrize as parametrize
from torch.nn.utils.parametrizations import spectral_norm, weight_norm


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).transpose(-1, -2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = weight_norm(nn.Linear(6, 16))
        self.fc2 = spectral_norm(nn.Linear(16, 16))
        self.fc3 = nn.Linear(16, 16)
        parametrize.register_parametrization(self.fc3, "weight", Symmetric())
        self.out = nn.Linear(16, 3)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = F.relu(self.fc3(x))
        return self.out(x)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
    for step in range(5):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}")
    with parametrize.cached():
        print("symmetric", torch.allclose(model.fc3.weight, model.fc3.weight.T))
    if os.environ.get("REALWORLD_STATE"):
        torch.save(model.state_dict(), os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
