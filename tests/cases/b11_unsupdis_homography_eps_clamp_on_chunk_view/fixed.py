"""The fixed twin: the small denominators are replaced out of place with a mask (kail8/UnsupDIS-pytorch#26)."""
import torch
import torch.nn.functional as F
from torch import nn


def transform(theta, height, width, eps=1e-7):
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, height), torch.linspace(-1, 1, width), indexing="ij")
    grid = torch.stack([xs.reshape(-1), ys.reshape(-1), torch.ones(height * width)]).unsqueeze(0)
    T_g = theta.view(-1, 3, 3) @ grid.expand(theta.size(0), 3, height * width)
    x_s, y_s, t_s = torch.chunk(T_g, 3, dim=1)
    t_s_flat = t_s.reshape([-1])
    small_value = (t_s_flat.detach().abs() < eps).float()
    t_s_flat = t_s_flat * (1 - small_value) + small_value * eps
    x_s_flat, y_s_flat = x_s.reshape([-1]) / t_s_flat, y_s.reshape([-1]) / t_s_flat
    return torch.stack([x_s_flat, y_s_flat], -1).view(-1, height, width, 2)


class HomographyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(2, 8, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4))
        self.fc = nn.Linear(8 * 16, 8)

    def forward(self, a, b):
        h8 = self.fc(self.features(torch.cat([a, b], 1)).flatten(1)) * 0.01
        return torch.cat([h8, torch.zeros(h8.size(0), 1)], 1) + torch.eye(3).reshape(1, 9)


torch.manual_seed(0)
net = HomographyNet()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-4)
input1, input2 = torch.rand(1, 1, 16, 16), torch.rand(1, 1, 16, 16)
theta = net(input1, input2)
warped = F.grid_sample(input2, transform(theta, 16, 16), align_corners=True)
loss = F.l1_loss(warped, input1)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print(f"loss {loss.item():.4f}")
