"""Fine-tuning a pruned model (microsoft/nni#4521): the optimizer is built before speedup replaces the
masked layers with smaller ones, so it still holds the old tensors and the new layers never change."""
import torch
from torch import nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def speedup_model(model, keep):
    """Replace fc1/fc2 by smaller layers holding the kept (unmasked) rows and columns."""
    fc1, fc2 = nn.Linear(10, len(keep)), nn.Linear(len(keep), 3)
    with torch.no_grad():
        fc1.weight.copy_(model.fc1.weight[keep])
        fc1.bias.copy_(model.fc1.bias[keep])
        fc2.weight.copy_(model.fc2.weight[:, keep])
        fc2.bias.copy_(model.fc2.bias)
    model.fc1, model.fc2 = fc1, fc2


torch.manual_seed(0)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)  # <- optimizer
keep = model.fc1.weight.norm(dim=1).argsort(descending=True)[:8]
speedup_model(model, keep)
x, y = torch.randn(32, 10), torch.randint(0, 3, (32,))
before = model.fc1.weight.detach().clone()
for epoch in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
print("fc1 changed:", not torch.equal(before, model.fc1.weight))
