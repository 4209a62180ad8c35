"""nvdiffmodeling issue #11 "matrix gradients does not flow back when using renderutils xfm_points",
https://github.com/NVlabs/nvdiffmodeling/issues/11: the reporter optimized the camera pose that goes into
`mtx_in` in render.py (`v_pos_clip = ru.xfm_points(mesh.v_pos[None, ...], mtx_in)`) and the pose never got a
gradient; "Only when using use_python=True it worked." The maintainer confirmed: the fused kernel behind
xfm_points (`_xfm_func`, a custom autograd.Function) returns a gradient for the points only, None for the
matrix, "so for now, if you need gradients to the matrix, please write the transform op in PyTorch (or use the
`use_python=True` flag)". Fix: call xfm_points(..., use_python=True) in render.
The CUDA plugin is replaced by the same math in torch; the rasterizer is a soft point splat."""
import math

import torch
import torch.nn.functional as F

torch.set_num_threads(1)


# --- renderutils stand-in (src/renderutils/ops.py) ------------------------------------------------
class _xfm_func(torch.autograd.Function):
    @staticmethod
    def forward(ctx, points, matrix, isPoints):
        ctx.save_for_backward(points, matrix)
        ctx.isPoints = isPoints
        return torch.matmul(F.pad(points, pad=(0, 1), mode='constant', value=1.0), matrix.transpose(1, 2))

    @staticmethod
    def backward(ctx, dout):
        points, matrix = ctx.saved_tensors
        d_points = torch.matmul(dout, matrix[:, :, :3]).sum(0, keepdim=True)
        return (d_points,) + (None, None)  # the kernel has no gradient for the matrix


def xfm_points(points, matrix, use_python=False):
    if use_python:
        out = torch.matmul(F.pad(points, pad=(0, 1), mode='constant', value=1.0), torch.transpose(matrix, 1, 2))
    else:
        out = _xfm_func.apply(points, matrix, True)
    return out


# --- camera helpers and a soft point rasterizer ---------------------------------------------------
def perspective(fovy=0.8, aspect=1.0, n=0.1, f=100.0):
    y = math.tan(fovy / 2)
    return torch.tensor([[1 / (y * aspect), 0, 0, 0], [0, 1 / y, 0, 0],
                         [0, 0, -(f + n) / (f - n), -(2 * f * n) / (f - n)], [0, 0, -1, 0]])


def translate(t):
    m = torch.eye(4)
    return torch.cat([torch.cat([m[:3, :3], t.view(3, 1)], 1), m[3:]], 0)


def render(v_pos, mtx_in, res=16, sigma=0.01):
    v_pos_clip = xfm_points(v_pos[None, ...], mtx_in, use_python=True)  # <- non_differentiable
    xy = v_pos_clip[0, :, :2] / v_pos_clip[0, :, 3:4]
    lin = torch.linspace(-1, 1, res)
    ys, xs = torch.meshgrid(lin, lin, indexing="ij")
    pix = torch.stack((xs, ys), -1).reshape(-1, 1, 2)
    d2 = ((pix - xy[None]) ** 2).sum(-1)
    return (1 - torch.prod(1 - torch.exp(-d2 / sigma), dim=1)).reshape(res, res)


torch.manual_seed(0)
v_pos = torch.randn(30, 3) * 0.5
proj = perspective()
with torch.no_grad():
    target = render(v_pos, (proj @ translate(torch.tensor([0.3, -0.2, -3.0])))[None])

cam_pos = torch.nn.Parameter(torch.tensor([0.0, 0.0, -3.5]))
optimizer = torch.optim.Adam([cam_pos], lr=0.05)
start = cam_pos.detach().clone()
for it in range(10):
    mtx_in = (proj @ translate(cam_pos))[None]
    img = render(v_pos, mtx_in)
    loss = F.mse_loss(img, target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("loss:", round(loss.item(), 5))
print("cam_pos.grad is None:", cam_pos.grad is None)
print("camera moved:", not torch.equal(start, cam_pos.detach()))
