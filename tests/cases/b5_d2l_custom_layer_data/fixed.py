"""The fixed twin: forward uses the parameters themselves, so autograd tracks them."""
import torch
from torch import nn
from torch.nn import functional as F


class MyLinear(nn.Module):
    def __init__(self, in_units, units):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(in_units, units))
        self.bias = nn.Parameter(torch.randn(units,))

    def forward(self, X):
        linear = torch.matmul(X, self.weight) + self.bias
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
