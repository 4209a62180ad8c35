"""A temperature kept as a plain tensor attribute and handed to the optimizer: it never changes."""
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.temperature = torch.ones(1)  # <- non_parameter_tensor

    def forward(self, x):
        return self.fc(x) / self.temperature


torch.manual_seed(0)
model = Scaled()
opt = torch.optim.SGD([*model.parameters(), model.temperature], lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
for _ in range(3):
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
