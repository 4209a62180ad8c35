import torch
from torch import nn


class Gated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.gate = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return self.fc(x) * torch.sigmoid(self.gate)


torch.manual_seed(0)
model = Gated()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
for _ in range(2):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
