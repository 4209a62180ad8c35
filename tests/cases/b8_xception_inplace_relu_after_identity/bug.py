"""An Xception block (osmr/imgclsmob#13): the identity branch convolves x first, then the body starts with
nn.ReLU(inplace=True), which overwrites the x that conv saved; backward raises "modified by an inplace operation"."""
import torch
import torch.nn.functional as F
from torch import nn


class XceptionUnit(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.identity_conv = nn.Conv2d(channels, channels, 1)
        self.body = nn.Sequential(
            nn.ReLU(inplace=True),  # <- inplace_saved
            nn.Conv2d(channels, channels, 3, padding=1, groups=channels),
            nn.Conv2d(channels, channels, 1),
        )

    def forward(self, x):
        identity = self.identity_conv(x)
        return self.body(x) + identity


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), XceptionUnit(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(4, 3, 8, 8), torch.randint(0, 2, (4,))
for step in range(3):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
