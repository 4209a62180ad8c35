"""A selective-kernel attention layer in zero-restore (aupendu/zero-restore#7): the layer scales its ReLU output in
place, which ReluBackward saved; backward raises "modified by an inplace operation" even with ReLU(inplace=False).
The maintainer's fix is a .clone() in the forward."""
import torch
import torch.nn.functional as F
from torch import nn


class SKConv(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.relu = nn.ReLU(inplace=False)
        self.fc = nn.Linear(channels, channels)

    def forward(self, x):
        feats = self.relu(self.conv(x))
        attention = torch.sigmoid(self.fc(feats.mean((2, 3))))[:, :, None, None]
        feats *= attention  # <- inplace_saved
        return feats + x


torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), SKConv(), nn.Conv2d(4, 3, 3, padding=1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
noisy, clean = torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)
for step in range(3):
    loss = F.mse_loss(model(noisy), clean)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")
