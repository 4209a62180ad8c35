"""An SNLI classifier (pytorch/pytorch#715): the hidden layers are kept in a plain Python list, so
model.parameters() misses them; they get gradients but the optimizer never updates them."""
import torch
import torch.nn.functional as F
from torch import nn


class SNLINet(nn.Module):
    def __init__(self, n_hid=16, n_layers=2):
        super().__init__()
        self.embed = nn.Linear(10, n_hid)
        self.hids = []  # <- optimizer
        for _ in range(n_layers):
            self.hids.append(nn.Sequential(nn.Linear(n_hid, n_hid), nn.Tanh()))
        self.classifier = nn.Linear(n_hid, 3)

    def forward(self, x):
        h = self.embed(x)
        for layer in self.hids:
            h = layer(h)
        return self.classifier(h)


torch.manual_seed(0)
model = SNLINet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
x, y = torch.randn(32, 10), torch.randint(0, 3, (32,))
before = model.hids[0][0].weight.clone()
for step in range(20):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("hidden layer has grad:", model.hids[0][0].weight.grad is not None,
      "changed:", not torch.equal(before, model.hids[0][0].weight))
