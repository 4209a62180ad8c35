"""COGS issue #9 "[Question] How to backpropagate the gradient of the camera ?",
https://github.com/RaymondJiangkw/COGS/issues/9: with the vanilla diff-gaussian-rasterization the user made the
camera pose an nn.Parameter and gave it to Adam beside the Gaussians, but "the camera pose can not be update as they
don't have grad". Why (the maintainer): the vanilla rasterizer does not differentiate through the camera: the view
matrix travels inside raster_settings (a NamedTuple, invisible to autograd) into _RasterizeGaussians, whose
backward returns gradients for the Gaussians only and None for raster_settings.
Fix (the maintainer's pointer, COLMAP-Free 3DGS's work-around): apply the pose to the Gaussians in PyTorch (rotate
and translate means3D into the camera frame) and render them with an identity view matrix, so the pose's gradient
comes back through grad_means3D. The rasterizer below is a small PyTorch stand-in for the CUDA kernel with the
same autograd.Function interface. The pose keeps .grad None and never moves."""
from typing import NamedTuple

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
H = W = 20


class GaussianRasterizationSettings(NamedTuple):
    image_height: int
    image_width: int
    focal: float
    viewmatrix: torch.Tensor


def splat(means3D, colors, opacities, s):  # what the CUDA kernel computes
    cam = means3D @ s.viewmatrix[:3, :3].T + s.viewmatrix[:3, 3]
    uv = s.focal * cam[:, :2] / cam[:, 2:3] + torch.tensor([s.image_width / 2, s.image_height / 2])
    ys, xs = torch.meshgrid(torch.arange(s.image_height), torch.arange(s.image_width), indexing="ij")
    pix = torch.stack([xs, ys], -1).float().view(-1, 1, 2)
    w = torch.sigmoid(opacities).view(1, -1) * torch.exp(-((pix - uv) ** 2).sum(-1) / 4.0)
    return (w @ colors).view(s.image_height, s.image_width, 3)


class _RasterizeGaussians(torch.autograd.Function):
    @staticmethod
    def forward(ctx, means3D, colors, opacities, raster_settings):
        ctx.raster_settings = raster_settings
        ctx.save_for_backward(means3D, colors, opacities)
        return splat(means3D, colors, opacities, raster_settings)

    @staticmethod
    def backward(ctx, grad_out):
        means3D, colors, opacities = [t.detach().requires_grad_() for t in ctx.saved_tensors]
        with torch.enable_grad():
            image = splat(means3D, colors, opacities, ctx.raster_settings)
        grads = torch.autograd.grad(image, (means3D, colors, opacities), grad_out)
        return grads[0], grads[1], grads[2], None  # no gradient for raster_settings (the camera)


class CameraPose(nn.Module):
    def __init__(self, rot, trans):
        super().__init__()
        self.cam_rot_delta = nn.Parameter(rot.clone())
        self.cam_trans_delta = nn.Parameter(trans.clone())

    def rotation(self):
        r = self.cam_rot_delta
        zero = torch.zeros((), dtype=r.dtype)
        skew = torch.stack([zero, -r[2], r[1], r[2], zero, -r[0], -r[1], r[0], zero]).view(3, 3)
        return torch.linalg.matrix_exp(skew)

    def world_view_transform(self):
        top = torch.cat([self.rotation(), self.cam_trans_delta.view(3, 1)], 1)
        return torch.cat([top, torch.tensor([[0.0, 0.0, 0.0, 1.0]])], 0)

    def transform(self, xyz):
        return xyz @ self.rotation().T + self.cam_trans_delta


def render(means3D, colors, opacities, viewmatrix):
    settings = GaussianRasterizationSettings(H, W, 20.0, viewmatrix)
    return _RasterizeGaussians.apply(means3D, colors, opacities, settings)


# the scene: 3D Gaussians in front of the camera; the target view comes from the true pose
xyz = torch.randn(48, 3) * 0.4 + torch.tensor([0.0, 0.0, 3.0])
true_pose = CameraPose(torch.tensor([0.05, -0.08, 0.03]), torch.tensor([0.15, -0.1, 0.2]))
true_colors = torch.rand(48, 3)
with torch.no_grad():
    gt_image = render(true_pose.transform(xyz), true_colors, torch.zeros(48), torch.eye(4))

colors = nn.Parameter(torch.full((48, 3), 0.5))
opacities = nn.Parameter(torch.zeros(48))
camera = CameraPose(torch.zeros(3), torch.zeros(3))
optimizer = torch.optim.Adam([
    {"params": [colors, opacities], "lr": 0.02},
    {"params": camera.parameters(), "lr": 0.01},
])
start = camera.cam_trans_delta.detach().clone()

for it in range(25):
    optimizer.zero_grad()
    image = render(xyz, colors, opacities, viewmatrix=camera.world_view_transform())  # <- non_differentiable
    loss = (image - gt_image).abs().mean()
    loss.backward()
    optimizer.step()
    if it % 10 == 0:
        print(f"iter {it}: loss {loss.item():.4f}")

print("cam_trans_delta.grad:", camera.cam_trans_delta.grad)
print("camera pose changed:", not torch.equal(start, camera.cam_trans_delta.detach()))
print("translation error:", (camera.cam_trans_delta - true_pose.cam_trans_delta).norm().item())
