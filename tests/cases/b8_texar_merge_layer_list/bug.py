"""texar-pytorch's MergeLayer (asyml/texar-pytorch#72): the merged layers are kept in a Python list, so their
weights are missing from parameters(); they get gradients and the optimizer never steps them."""
import torch
import torch.nn.functional as F
from torch import nn


class MergeLayer(nn.Module):
    def __init__(self, layers, mode="concat"):
        super().__init__()
        self._layers = list(layers)  # <- optimizer
        self._mode = mode

    def forward(self, x):
        return torch.cat([layer(x) for layer in self._layers], dim=-1)


torch.manual_seed(0)
model = nn.Sequential(MergeLayer([nn.Linear(6, 4), nn.Linear(6, 4)]), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 6), torch.randn(32, 1)
first = model[0]._layers[0].weight
before = first.clone()
for step in range(20):
    loss = F.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("merged layer grad:", first.grad is not None, "changed:", not torch.equal(before, first))
