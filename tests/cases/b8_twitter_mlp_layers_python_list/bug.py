"""The MLP of twitter/the-algorithm-ml (pull request #136): the layers are collected in a Python list before being
stored, so they are not registered; they get gradients and the optimizer never steps them."""
import torch
import torch.nn.functional as F
from torch import nn


class Mlp(nn.Module):
    def __init__(self, in_features=10, layer_sizes=(16, 8, 1)):
        super().__init__()
        modules = []
        for size in layer_sizes:
            modules.append(nn.Linear(in_features, size))
            in_features = size
        self.layers = modules  # <- optimizer
        self.scale = nn.Parameter(torch.ones(1))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x * self.scale


torch.manual_seed(0)
model = Mlp()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(32, 10), torch.rand(32, 1)
before = model.layers[0].weight.clone()
for step in range(20):
    loss = F.binary_cross_entropy_with_logits(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("first layer changed:", not torch.equal(before, model.layers[0].weight))
