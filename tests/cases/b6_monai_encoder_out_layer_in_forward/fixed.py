"""The fixed twin: the output layer is built once in __init__ from the known feature size, so it is registered
before the optimizer is made and trains with the rest."""
import torch
import torch.nn.functional as F
from torch import nn


class DiffusionModelEncoder(nn.Module):
    def __init__(self, in_channels=1, channels=4, out_channels=2):
        super().__init__()
        self.out_channels = out_channels
        self.conv_in = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.time_embed = nn.Sequential(nn.Linear(1, channels), nn.SiLU())
        self.down = nn.Conv2d(channels, channels, 3, stride=2, padding=1)
        self.out = nn.Sequential(nn.Linear(channels * 16, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, out_channels))

    def forward(self, x, timesteps):
        h = self.conv_in(x) + self.time_embed(timesteps.float().unsqueeze(-1) / 1000)[:, :, None, None]
        h = F.silu(self.down(h))
        h = h.reshape(h.shape[0], -1)
        return self.out(h)


torch.manual_seed(0)
classifier = DiffusionModelEncoder()
classifier(torch.randn(1, 1, 8, 8), torch.zeros(1, dtype=torch.long))
optimizer = torch.optim.Adam(classifier.parameters(), lr=1e-3)
images, labels = torch.randn(4, 1, 8, 8), torch.tensor([0, 1, 1, 0])
for step in range(3):
    timesteps = torch.randint(0, 1000, (4,))
    loss = F.cross_entropy(classifier(images, timesteps), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    in_optimizer = any(p is classifier.out[0].weight for g in optimizer.param_groups for p in g["params"])
    print(f"step {step}: loss {loss.item():.4f}, output layer in the optimizer: {in_optimizer}")
