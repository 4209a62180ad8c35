"""The fixed twin of deep_cage_weights_detached_regularizer (https://github.com/yifita/deep_cage/issues/16)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
offset_net = nn.Linear(3, 3)
optimizer = torch.optim.Adam(offset_net.parameters(), lr=1e-2)
cage = torch.randn(4, 3)
points, target = torch.randn(64, 3), torch.randn(64, 3)
mvc_weight = 10.0


def deform(points):
    new_cage = cage + offset_net(cage)
    weights = torch.softmax(-3 * torch.cdist(points, new_cage), dim=-1)
    return weights @ new_cage, weights


for step in range(20):
    deformed, weights = deform(points)
    loss_cd = F.mse_loss(deformed, target)
    loss_wreg = (weights ** 2).sum(-1).mean()
    loss = loss_cd + mvc_weight * loss_wreg
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"cd {loss_cd.item():.4f} wreg {loss_wreg.item():.4f}")
