"""Copying a fitted skorch net with copy.deepcopy (skorch-dev/skorch#317): __getstate__ serializes each
cuda-dependent attribute (module_, optimizer_) on its own, so in the copy the optimizer holds copies of the
parameters, not the copied module's parameters; partial_fit on the copy computes gradients and the weights stay
frozen."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class NeuralNetRegressor:
    cuda_dependent_attributes_ = ("module_", "optimizer_")

    def __init__(self, module, lr=0.1):
        self.module, self.lr = module, lr

    def initialize(self):
        self.module_ = self.module()
        self.optimizer_ = torch.optim.SGD(self.module_.parameters(), lr=self.lr)
        return self

    def partial_fit(self, X, y, epochs=3):
        for _ in range(epochs):
            self.optimizer_.zero_grad()
            loss = F.mse_loss(self.module_(X), y)
            loss.backward()
            self.optimizer_.step()
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        for key in self.cuda_dependent_attributes_:
            if key in state:
                state[key] = copy.deepcopy(state[key])  # <- optimizer
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)


class Simple(nn.Module):
    def __init__(self):
        super().__init__()
        self.simple = nn.Sequential(nn.Linear(28, 1), nn.Sigmoid())

    def forward(self, x):
        return self.simple(x)


def check(net, name):
    print(f"{name} first params =", net.module_.simple[0].weight.detach()[0, :3])


torch.manual_seed(0)
X, y = torch.randn(64, 28), torch.rand(64, 1)
n1 = NeuralNetRegressor(module=Simple).initialize()
n1.partial_fit(X, y)
check(n1, "n1")
n2 = copy.deepcopy(n1)
check(n2, "n2")
n2.partial_fit(X, y)
check(n2, "n2 after partial_fit")
