"""The fixed twin: the relation weights live in nn.ParameterDict containers, so they are registered."""
import torch
from torch import nn


class RelNet(nn.Module):
    def __init__(self, nfeat=4, numrel=3):
        super().__init__()
        self.waggrs = nn.ModuleList()
        for rel in range(numrel):
            p = {"w": nn.Parameter(1.0 + torch.randn(nfeat, 2)), "b": nn.Parameter(torch.zeros(2))}
            self.waggrs.append(nn.ParameterDict(p))
        self.out = nn.Linear(2, 1)

    def forward(self, x, rel):
        p = self.waggrs[rel]
        return self.out(torch.tanh(x @ p["w"] + p["b"]))


torch.manual_seed(0)
model = RelNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
before = model.waggrs[0]["w"].detach().clone()
for step in range(3):
    optimizer.zero_grad()
    loss = sum(((model(x, rel) - y) ** 2).mean() for rel in range(3))
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
print("registered:", [n for n, _ in model.named_parameters()])
print("waggrs[0]['w'] changed:", not torch.equal(before, model.waggrs[0]["w"]))
