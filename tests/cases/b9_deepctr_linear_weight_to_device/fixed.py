"""The fixed twin: the tensor is moved first and then wrapped, so the Parameter is registered (shenweichen/DeepCTR-
Torch#61)."""
import torch
import torch.nn.functional as F
from torch import nn


class Linear(nn.Module):
    def __init__(self, n_dense, device="cpu", dtype=torch.float64):
        super().__init__()
        self.weight = nn.Parameter(torch.Tensor(n_dense, 1).to(device, dtype))
        nn.init.normal_(self.weight, mean=0, std=1e-4)

    def forward(self, dense):
        return dense @ self.weight


class WDL(nn.Module):
    def __init__(self, n_dense=6):
        super().__init__()
        self.linear_model = Linear(n_dense)
        self.dnn = nn.Sequential(nn.Linear(n_dense, 8, dtype=torch.float64), nn.ReLU(), nn.Linear(8, 1, dtype=torch.float64))

    def forward(self, dense):
        return torch.sigmoid(self.linear_model(dense) + self.dnn(dense))


torch.manual_seed(0)
model = WDL()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(128, 6, dtype=torch.float64)
y = (x[:, :1] - x[:, 1:2] > 0).double()
before = model.linear_model.weight.detach().clone()
for step in range(30):
    loss = F.binary_cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("registered parameters:", len(list(model.parameters())), "linear weight moved:",
      not torch.equal(before, model.linear_model.weight))
