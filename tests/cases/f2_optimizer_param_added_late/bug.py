"""A head added to the model after the optimizer was built: it gets gradients but never changes."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 8)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


torch.manual_seed(0)
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)  # <- optimizer
model.head = nn.Linear(8, 3)  # <- defined
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
for _ in range(2):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
