"""discuss.pytorch.org "In-place operation and ResNet" (t/10724): ResidualUnitA computes
`residual = bn_1(conv_1(x))` and then `x += residual`, writing in place into the very tensor `x` that conv_1 saved for
its weight gradient, so backward raises "one of the variables needed for gradient computation has been modified by an
inplace operation". The answer in the thread: conv_1's backward needs the original x; ResidualUnitB keeps the input
as `identity` and adds into the conv output instead (here: `x = x + residual`, out of place)."""
import torch
import torch.nn.functional as F
from torch import nn


class ResidualUnitA(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_0 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn_0 = nn.BatchNorm2d(8)
        self.conv_1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn_1 = nn.BatchNorm2d(8)

    def forward(self, x):
        x = self.conv_0(x)
        x = self.bn_0(x)
        x = F.relu(x, inplace=True)

        residual = self.conv_1(x)
        residual = self.bn_1(residual)
        x += residual  # <- inplace_saved
        x = F.relu(x, inplace=True)
        return x


torch.manual_seed(0)
model = nn.Sequential(ResidualUnitA(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
images, labels = torch.randn(4, 3, 8, 8), torch.randint(0, 4, (4,))
for step in range(2):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
