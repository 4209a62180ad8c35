"""Gradient checkpointing of a trunk whose input does not require grad (pytorch/pytorch#7617): with the reentrant
checkpoint, checkpoint(trunk, x) returns a tensor that does not require grad when no input does, although the
trunk has parameters; the head after it still trains, the trunk gets no gradient ("None of the inputs have
requires_grad=True. Gradients will be None")."""
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
        h = checkpoint(self.trunk, x, use_reentrant=True)  # <- no_grad
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
print(f"loss {loss.item():.4f}; trunk grad: {model.trunk[0].weight.grad}")
