"""diff-gaussian-rasterization-for-gsslam (yanchi-3dv/diff-gaussian-rasterization-for-gsslam#1,
https://github.com/yanchi-3dv/diff-gaussian-rasterization-for-gsslam/issues/1): "grad is none for translation
vector and quaternion". The user estimates a camera pose through the rasterizer's pose backward, but after
loss.backward() `cam_q_w2c.grad` and `cam_t_w2c.grad` are None.
Why: the pose tensors are made as
    cam_q_w2c = torch.tensor(Rotation.from_matrix(R).as_quat(), device=..., requires_grad=True).float()
The NumPy values are float64, so torch.tensor(..., requires_grad=True) makes a float64 leaf and `.float()`
returns a float32 copy of it: cam_q_w2c / cam_t_w2c are non-leaf results of a cast, whose .grad is never
populated (the gradient goes to the hidden float64 leaf that nothing keeps).
Fix: create the leaf directly in float32: torch.tensor(..., dtype=torch.float32, device=..., requires_grad=True)."""
import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
device = "cpu"


def quat_from_matrix(R):
    """scipy.spatial.transform.Rotation.from_matrix(R).as_quat() stand-in: (x, y, z, w), float64."""
    w = np.sqrt(max(0.0, 1.0 + R[0, 0] + R[1, 1] + R[2, 2])) / 2.0
    x = (R[2, 1] - R[1, 2]) / (4.0 * w)
    y = (R[0, 2] - R[2, 0]) / (4.0 * w)
    z = (R[1, 0] - R[0, 1]) / (4.0 * w)
    return np.array([x, y, z, w])


# ---- diff-gaussian-rasterization-for-gsslam stand-in: the rasterizer's forward takes the pose as
# (cam_q_w2c, cam_t_w2c) and its backward returns gradients for them ---------------------------------------
def quat_to_rotmat(q):
    x, y, z, w = q / q.norm()
    return torch.stack([
        torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)]),
        torch.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)]),
        torch.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]),
    ])


class GaussianRasterizer(nn.Module):
    def forward(self, means3D, colors, cam_q_w2c, cam_t_w2c, focal=50.0):
        p_cam = means3D @ quat_to_rotmat(cam_q_w2c).T + cam_t_w2c
        uv = focal * p_cam[:, :2] / p_cam[:, 2:3]
        return torch.cat([uv, colors], dim=-1)  # a "rendered image": projected splats and their colours
# ---------------------------------------------------------------------------------------------------------


means3D = torch.randn(100, 3) + torch.tensor([0.0, 0.0, 6.0])
colors = torch.rand(100, 3)
rasterizer = GaussianRasterizer()

# ground-truth pose renders the target image; the pose to estimate starts from a perturbed one
gt_image = rasterizer(means3D, colors, torch.tensor([0.0, 0.0, 0.0, 1.0]), torch.zeros(3))
angle = 0.05
R = np.array([[np.cos(angle), -np.sin(angle), 0.0], [np.sin(angle), np.cos(angle), 0.0], [0.0, 0.0, 1.0]])
T = np.array([0.1, -0.05, 0.2])

cam_q_w2c = torch.tensor(quat_from_matrix(R), device=device, requires_grad=True).float()  # <- non_leaf_watched
cam_t_w2c = torch.tensor(T, device=device, requires_grad=True).float()

lr = 1e-4
for it in range(5):
    image = rasterizer(means3D, colors, cam_q_w2c, cam_t_w2c)
    loss = (image - gt_image).abs().mean()
    loss.backward()
    print(f"iter {it} loss {loss.item():.4f} cam_q_w2c.grad {cam_q_w2c.grad} cam_t_w2c.grad {cam_t_w2c.grad}")
    with torch.no_grad():
        for p in (cam_q_w2c, cam_t_w2c):
            if p.grad is not None:
                p -= lr * p.grad
                p.grad = None
