"""Camera-pose refinement through torch-ngp's ray marcher (ashawkey/torch-ngp#119): `_march_rays_train`
is an autograd.Function with a forward only, so once rays_o/rays_d depend on a learnable pose the
backward raises "You must implement either the backward or vjp method"."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Function


class _march_rays_train(Function):  # <- autograd_error
    @staticmethod
    def forward(ctx, rays_o, rays_d, nears, fars, num_steps):
        t = torch.linspace(0, 1, num_steps)
        z_vals = nears[:, None] + (fars - nears)[:, None] * t
        xyzs = rays_o[:, None, :] + rays_d[:, None, :] * z_vals[..., None]
        dirs = rays_d[:, None, :].expand_as(xyzs).contiguous()
        deltas = torch.full_like(z_vals, 1.0 / num_steps) * (fars - nears)[:, None]
        return xyzs, dirs, deltas


march_rays_train = _march_rays_train.apply


class NeRFNetwork(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.sigma_net = nn.Sequential(nn.Linear(3, hidden), nn.ReLU(), nn.Linear(hidden, 1 + hidden))
        self.color_net = nn.Sequential(nn.Linear(hidden + 3, hidden), nn.ReLU(), nn.Linear(hidden, 3))

    def render(self, rays_o, rays_d, num_steps=8):
        nears, fars = torch.full((rays_o.shape[0],), 0.5), torch.full((rays_o.shape[0],), 2.5)
        xyzs, dirs, deltas = march_rays_train(rays_o, rays_d, nears, fars, num_steps)
        h = self.sigma_net(xyzs)
        sigmas, geo_feat = F.softplus(h[..., 0]), h[..., 1:]
        rgbs = torch.sigmoid(self.color_net(torch.cat([geo_feat, dirs], dim=-1)))
        alphas = 1 - torch.exp(-sigmas * deltas)
        weights = alphas * torch.cumprod(torch.cat([torch.ones_like(alphas[:, :1]), 1 - alphas + 1e-10], -1), -1)[:, :-1]
        return (weights[..., None] * rgbs).sum(dim=1)


torch.manual_seed(0)
model = NeRFNetwork()
rays_o_gt, rays_d = torch.zeros(16, 3), F.normalize(torch.randn(16, 3), dim=-1)
pose_offset = nn.Parameter(torch.zeros(1, 3))
with torch.no_grad():
    images = model.render(rays_o_gt + torch.tensor([[0.1, -0.05, 0.02]]), rays_d)
optimizer = torch.optim.Adam([{"params": model.parameters()}, {"params": [pose_offset], "lr": 1e-2}], lr=1e-3)
for step in range(3):
    rays_o = rays_o_gt + pose_offset
    pred_rgb = model.render(rays_o, rays_d)
    loss = F.mse_loss(pred_rgb, images)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.6f} pose {pose_offset.detach().view(-1).tolist()}")
