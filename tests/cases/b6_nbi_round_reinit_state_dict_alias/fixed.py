"""The fixed twin: the initial state is a deep copy of the state dict, so reloading it re-initializes the network
before each round."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


class NBI:
    def __init__(self, network):
        self.network = network
        self.init_state = copy.deepcopy(self.get_network().state_dict())

    def get_network(self):
        return self.network

    def fit(self, x, theta, n_rounds=2, epochs=3):
        for rnd in range(n_rounds):
            self.get_network().load_state_dict(self.init_state)
            start = self.get_network()[0].weight.detach().clone()
            optimizer = torch.optim.Adam(self.get_network().parameters(), lr=1e-2)
            for epoch in range(epochs):
                loss = F.mse_loss(self.get_network()(x), theta)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            print(f"round {rnd}: loss {loss.item():.4f}, started from the initial weights:", torch.equal(start, self.first_weights))
            x, theta = x + 0.1 * torch.randn_like(x), theta


torch.manual_seed(0)
network = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
engine = NBI(network)
engine.first_weights = network[0].weight.detach().clone()
engine.fit(torch.randn(32, 6), torch.randn(32, 2))
