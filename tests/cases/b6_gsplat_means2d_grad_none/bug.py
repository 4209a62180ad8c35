"""Gaussian-splatting densification with gsplat (nerfstudio-project/gsplat#390): the trainer reads
info["means2D"].grad after loss.backward() to find Gaussians with large screen-space gradients, but means2D is an
intermediate tensor computed by the projection, not a leaf, so its .grad is None unless retain_grad() was called
on it (absgrad=True only worked because that path retains it)."""
import torch


def rasterization(means, scales, colors, viewmat, K, width=8, height=8):
    cam = means @ viewmat[:3, :3].T + viewmat[:3, 3]
    means2d = (cam[:, :2] / cam[:, 2:3]) @ K[:2, :2].T + K[:2, 2]
    ys, xs = torch.meshgrid(torch.arange(height, dtype=torch.float32), torch.arange(width, dtype=torch.float32), indexing="ij")
    pix = torch.stack([xs, ys], -1).view(-1, 1, 2)
    weights = torch.exp(-((pix - means2d) ** 2).sum(-1) / (2 * scales.exp() ** 2))
    render = (weights @ colors) / (weights.sum(-1, keepdim=True) + 1e-6)
    return render.view(height, width, 3), {"means2D": means2d}


torch.manual_seed(0)
N = 6
means = torch.nn.Parameter(torch.randn(N, 3) * 0.5 + torch.tensor([0.0, 0.0, 4.0]))
scales = torch.nn.Parameter(torch.zeros(N))
colors = torch.nn.Parameter(torch.rand(N, 3))
optimizer = torch.optim.Adam([means, scales, colors], lr=1e-2)
viewmat, K = torch.eye(4), torch.tensor([[8.0, 0, 4], [0, 8.0, 4], [0, 0, 1]])
gt_image = torch.rand(8, 8, 3)
grad2d_accum = torch.zeros(N)
for step in range(3):
    renders, info = rasterization(means, scales, colors, viewmat, K)  # <- non_leaf_watched
    loss = (renders - gt_image).abs().mean()
    optimizer.zero_grad()
    loss.backward()
    grad = info["means2D"].grad
    print(f"step {step}: loss {loss.item():.4f}, means2D.grad is None: {grad is None}")
    if grad is not None:
        grad2d_accum += grad.norm(dim=-1)
    optimizer.step()
print("Gaussians over the densify threshold:", int((grad2d_accum > 1e-4).sum()))
