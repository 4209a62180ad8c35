"""The fixed twin of sasa_rel_params_made_in_forward (https://github.com/leaderj1001/Stand-Alone-Self-Attention/issues/2)."""
import torch
import torch.nn.functional as F
from torch import nn


class AttentionConv(nn.Module):
    def __init__(self, channels=4, kernel_size=3):
        super().__init__()
        self.kernel_size = kernel_size
        self.qkv = nn.Conv2d(channels, 3 * channels, 1)
        self.rel_h = nn.Parameter(torch.randn(channels // 2, 1, 1, kernel_size, 1))
        self.rel_w = nn.Parameter(torch.randn(channels // 2, 1, 1, 1, kernel_size))

    def forward(self, x):
        b, c, h, w = x.shape
        k = self.kernel_size
        q, key, v = self.qkv(x).chunk(3, dim=1)
        key = F.unfold(key, k, padding=k // 2).view(b, c, h, w, k, k)
        v = F.unfold(v, k, padding=k // 2).view(b, c, h, w, k, k)
        k_h, k_w = key.split(c // 2, dim=1)
        key = torch.cat([k_h + self.rel_h, k_w + self.rel_w], dim=1)
        att = torch.softmax((q[..., None, None] * key).flatten(-2), -1).view_as(v)
        return (att * v).sum((-2, -1))


torch.manual_seed(0)
layer = AttentionConv()
model = nn.Sequential(layer, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(2, 4, 6, 6), torch.randint(0, 2, (2,))
for step in range(3):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print("rel_h in optimizer:", any(p is layer.rel_h for g in optimizer.param_groups for p in g["params"]))
