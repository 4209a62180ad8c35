"""ObjectSDF++ (QianyiWu/objectsdf_plus#10): the user encodes sampled 3D points p with a multi-resolution hash grid,
runs the SDF MLP on the encoded points p_en, and computes the SDF normals (for the eikonal loss) with
autograd.grad(sdf, p) in a sdf_gradient() helper that calls x.requires_grad_(True) first. Gradients w.r.t. p_en
work, but w.r.t. p autograd.grad raises "One of the differentiated Tensors appears to not have been used in the
graph": p did not require grad when it went through the encoder (p_en requires grad only because the grid
features are parameters), so the graph never saw p; turning requires_grad on inside the helper is too late.
The asker's fix: p.requires_grad_(True) before the points are encoded."""
import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)


class DenseGridEncoder(nn.Module):
    """Stand-in for the hash-grid encoder: trilinear lookups into learnable feature grids at two resolutions."""

    def __init__(self, resolutions=(4, 8), dim=2):
        super().__init__()
        self.grids = nn.ParameterList([nn.Parameter(torch.randn(1, dim, r, r, r) * 0.1) for r in resolutions])

    def forward(self, x):                                   # x in [-1, 1], [N, 3]
        g = x.view(1, -1, 1, 1, 3)
        feats = [F.grid_sample(grid, g, align_corners=True).view(grid.shape[1], -1).t() for grid in self.grids]
        return torch.cat(feats, dim=-1)


class SDFNetwork(nn.Module):
    def __init__(self, d_out=3, feat=16):
        super().__init__()
        self.encoding = DenseGridEncoder()
        self.mlp = nn.Sequential(nn.Linear(3 + 4, 64), nn.Softplus(beta=100), nn.Linear(64, d_out + feat))
        self.d_out = d_out
        self.divide_factor = 1.5

    def forward(self, p):
        p_en = torch.cat([p, self.encoding(p / self.divide_factor)], dim=-1)
        return self.mlp(p_en)


def sdf_gradient(sdf, x):
    x.requires_grad_(True)
    d_output = torch.ones_like(sdf, requires_grad=False)
    gradients = torch.autograd.grad(
        outputs=sdf, inputs=x, grad_outputs=d_output, create_graph=True,
        retain_graph=True, only_inputs=True)[0]
    return gradients


model = SDFNetwork()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-4)
target_sdf = torch.rand(256, 1) - 0.5
for it in range(3):
    p = torch.rand(256, 3) * 2 - 1                          # sampled points along the rays
    p.requires_grad_(True)
    output = model(p)
    sdf_raw = output[:, :model.d_out]
    sdf = -F.max_pool1d(-sdf_raw.unsqueeze(1), model.d_out).squeeze(-1)   # min over the object SDFs
    gradients = sdf_gradient(sdf, p)
    eikonal_loss = ((gradients.norm(2, dim=-1) - 1) ** 2).mean()
    loss = F.l1_loss(sdf, target_sdf) + 0.1 * eikonal_loss
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"iter {it} loss {loss.item():.4f} eikonal {eikonal_loss.item():.4f}")
