"""The fixed twin: the border is zeroed on a clone of the attention map, so sigmoid's saved output stays intact."""
import torch
import torch.nn.functional as F
from torch import nn


class USAM(nn.Module):
    def __init__(self, channels=8, polish=True):
        super().__init__()
        self.conv = nn.Conv2d(channels, 1, 3, padding=1)
        self.polish = polish

    def forward(self, x):
        att = torch.sigmoid(self.conv(x))
        if self.polish:
            att = att.clone()
            att[:, :, :, 0] = 0
            att[:, :, :, -1] = 0
            att[:, :, 0, :] = 0
            att[:, :, -1, :] = 0
        return x * att


class RKNet(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.usam = USAM(8)
        self.classifier = nn.Linear(8, num_classes)

    def forward(self, x):
        x = self.usam(F.relu(self.stem(x)))
        return self.classifier(x.mean((2, 3)))


torch.manual_seed(0)
model = RKNet()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images, labels = torch.randn(4, 3, 12, 12), torch.randint(0, 5, (4,))
for step in range(3):
    loss = F.cross_entropy(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
