"""DP-NeRF's rigid blurring kernel (dogyoonlee/DP-NeRF#2, #4): SE3Field.warp computes `theta =
torch.linalg.norm(rot, axis=-1)` and then `theta += 1.0e-10`, an in-place add on the output the norm saved for its
backward; `loss.backward()` fails with "one of the variables needed for gradient computation has been modified by
an inplace operation: [torch.FloatTensor [1024]], which is output 0 of LinalgVectorNormBackward0". The fix in the
thread: `theta = theta + 1.0e-10`."""
import torch
import torch.nn.functional as F
from torch import nn


def skew(w):
    z = torch.zeros_like(w[:, 0])
    return torch.stack([z, -w[:, 2], w[:, 1], w[:, 2], z, -w[:, 0], -w[:, 1], w[:, 0], z], -1).view(-1, 3, 3)


class SE3Field:
    def warp(self, pts, rot, trans):
        theta = torch.linalg.norm(rot, axis=-1)
        theta += 1.0e-10  # <- inplace_saved
        w, v = rot / theta.unsqueeze(-1), trans / theta.unsqueeze(-1)
        W, th = skew(w), theta[:, None, None]
        R = torch.eye(3) + torch.sin(th) * W + (1.0 - torch.cos(th)) * W @ W
        p = (th * torch.eye(3) + (1.0 - torch.cos(th)) * W + (th - torch.sin(th)) * W @ W) @ v[..., None]
        return (R @ pts[..., None] + p).squeeze(-1)


class RigidBlurringKernel(nn.Module):  # per-image embedding -> rotation and translation of each ray's points
    def __init__(self, n_images=4, d=16):
        super().__init__()
        self.img_embed = nn.Embedding(n_images, d)
        self.rv = nn.Sequential(nn.Linear(d, 32), nn.ReLU(), nn.Linear(32, 6))
        self.se3 = SE3Field()

    def forward(self, pts, img_idx):
        rv = 0.01 * self.rv(self.img_embed(img_idx))
        return self.se3.warp(pts, rv[:, :3], rv[:, 3:])


torch.manual_seed(0)
kernel = RigidBlurringKernel()
nerf = nn.Sequential(nn.Linear(3, 64), nn.ReLU(), nn.Linear(64, 4))  # xyz -> rgb, sigma
optimizer = torch.optim.Adam(list(kernel.parameters()) + list(nerf.parameters()), lr=5e-4)
n_rays, n_samples = 32, 8
pts = torch.rand(n_rays * n_samples, 3)
img_idx = torch.randint(0, 4, (n_rays,)).repeat_interleave(n_samples)
target = torch.rand(n_rays, 3)
for it in range(2):
    raw = nerf(kernel(pts, img_idx)).view(n_rays, n_samples, 4)
    alpha = 1.0 - torch.exp(-F.relu(raw[..., 3]))
    weights = alpha * torch.cumprod(torch.cat([torch.ones(n_rays, 1), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
    rgb = (weights[..., None] * torch.sigmoid(raw[..., :3])).sum(1)
    loss = F.mse_loss(rgb, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it}: loss {loss.item():.4f}")
