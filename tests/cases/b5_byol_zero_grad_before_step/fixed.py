"""The fixed twin: the optimizer steps before the gradients are zeroed."""
import copy

import torch
import torch.nn.functional as F
from torch import nn


def MLP(dim, projection_size, hidden_size=32):
    return nn.Sequential(nn.Linear(dim, hidden_size), nn.BatchNorm1d(hidden_size), nn.ReLU(inplace=True),
                         nn.Linear(hidden_size, projection_size))


def loss_fn(x, y):
    x = F.normalize(x, dim=-1, p=2)
    y = F.normalize(y, dim=-1, p=2)
    return 2 - 2 * (x * y).sum(dim=-1)


class BYOL(nn.Module):
    def __init__(self, net, hidden_dim=16, projection_size=8, moving_average_decay=0.99):
        super().__init__()
        self.online_encoder = nn.Sequential(net, MLP(hidden_dim, projection_size))
        self.online_predictor = MLP(projection_size, projection_size)
        self.target_encoder = copy.deepcopy(self.online_encoder)
        for p in self.target_encoder.parameters():
            p.requires_grad = False
        self.beta = moving_average_decay

    @torch.no_grad()
    def update_moving_average(self):
        for target, online in zip(self.target_encoder.parameters(), self.online_encoder.parameters()):
            target.mul_(self.beta).add_(online, alpha=1 - self.beta)

    def forward(self, x):
        image_one, image_two = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
        online_pred_one = self.online_predictor(self.online_encoder(image_one))
        online_pred_two = self.online_predictor(self.online_encoder(image_two))
        with torch.no_grad():
            target_proj_one = self.target_encoder(image_one)
            target_proj_two = self.target_encoder(image_two)
        loss = loss_fn(online_pred_one, target_proj_two.detach()) + loss_fn(online_pred_two, target_proj_one.detach())
        return loss.mean()


torch.manual_seed(0)
net = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
byol = BYOL(net)
optimizer = torch.optim.Adam(byol.parameters(), lr=3e-4)
images = torch.randn(8, 12)
before = net[0].weight.detach().clone()
for step in range(3):
    loss = byol(images)
    loss.backward()
    print(f"loss {loss.item():.3f}")
    optimizer.step()
    optimizer.zero_grad()
    byol.update_moving_average()
print("online encoder changed:", not torch.equal(before, net[0].weight))
