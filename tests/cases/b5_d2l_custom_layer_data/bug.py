"""d2l's custom fully connected layer (d2l-ai/d2l-en#2600): `MyLinear.forward` multiplies by
`self.weight.data` and adds `self.bias.data`, so the parameters never join the graph; training a net
built from it raises "element 0 of tensors does not require grad"."""
import torch
from torch import nn
from torch.nn import functional as F


class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units))
        self.bias = nn.Parameter(torch.randn(units,))

    def forward(self, X):
        linear = torch.matmul(X, self.weight.data) + self.bias.data  # <- data_attr
        return F.relu(linear)


torch.manual_seed(0)
net = nn.Sequential(MyLinear(64, 8), MyLinear(8, 1))
print(net(torch.rand(2, 64)))
trainer = torch.optim.SGD(net.parameters(), lr=0.01)
X, y = torch.rand(16, 64), torch.rand(16, 1)
for epoch in range(2):
    loss = F.mse_loss(net(X), y)
    trainer.zero_grad()
    loss.backward()
    trainer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
