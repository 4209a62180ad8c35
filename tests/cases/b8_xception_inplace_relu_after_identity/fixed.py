"""The fixed twin of xception_inplace_relu_after_identity (https://github.com/osmr/imgclsmob/issues/13)."""
import torch
import torch.nn.functional as F
from torch import nn


class XceptionUnit(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.identity_conv = nn.Conv2d(channels, channels, 1)
        self.body = nn.Sequential(
            nn.ReLU(inplace=False),
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
