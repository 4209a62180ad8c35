"""The fixed twin: the non-reentrant checkpoint records the trunk's parameters whatever its inputs
(pytorch/pytorch#7617), so the trunk trains."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.head = nn.Linear(32, 3)

    def forward(self, x):
        h = checkpoint(self.trunk, x, use_reentrant=False)
        return self.head(h)


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(10, 4), torch.randint(0, 3, (10,))
for step in range(5):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"loss {loss.item():.4f}; trunk has a gradient: {model.trunk[0].weight.grad is not None}")
