"""masked_wavelet_nerf (daniel03c1/masked_wavelet_nerf#10, https://github.com/daniel03c1/masked_wavelet_nerf/issues/10):
the TensoRF grids are pruned with a learned binary mask through a straight-through estimator,
`plane = (plane * (mask >= 0.5) - plane * mask).detach() + plane * mask`. A user asked whether the shorter
`plane = (plane * (mask >= 0.5)).detach()` is the same; the author answered that with it "you cannot update masks and
planes": the forward value is the same, but the detach covers the whole product, so density_plane and
density_plane_mask get no gradient (None) and never change; only the appearance grid and basis_mat learn.
Fix: keep the straight-through form, detaching only the difference from the soft product."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TensorVMMasked(nn.Module):
    def __init__(self, res=8, n_comp=4, app_dim=6):
        super().__init__()
        self.density_plane = nn.Parameter(0.1 * torch.randn(1, n_comp, res, res))
        self.density_plane_mask = nn.Parameter(torch.ones(1, n_comp, res, res))
        self.app_plane = nn.Parameter(0.1 * torch.randn(1, n_comp, res, res))
        self.basis_mat = nn.Linear(n_comp, app_dim, bias=False)
        self.render = nn.Linear(app_dim, 3)

    def sample(self, plane, xy):
        return F.grid_sample(plane, xy.view(1, -1, 1, 2), align_corners=True).view(plane.shape[1], -1).T

    def forward(self, xy):
        plane = self.density_plane
        mask = torch.sigmoid(self.density_plane_mask)
        plane = (plane * (mask >= 0.5)).detach()  # <- detach
        sigma = F.softplus(self.sample(plane, xy).sum(-1))
        rgb = torch.sigmoid(self.render(self.basis_mat(self.sample(self.app_plane, xy))))
        alpha = 1 - torch.exp(-sigma)
        return alpha[:, None] * rgb


torch.manual_seed(0)
model = TensorVMMasked()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
xy = torch.rand(64, 2) * 2 - 1
target_rgb = torch.rand(64, 3)
plane_before = model.density_plane.detach().clone()
for it in range(5):
    optimizer.zero_grad()
    loss = F.mse_loss(model(xy), target_rgb) + 1e-3 * torch.sigmoid(model.density_plane_mask).mean()
    loss.backward()
    optimizer.step()
print("density_plane.grad:", None if model.density_plane.grad is None else model.density_plane.grad.abs().sum().item())
print("density_plane changed:", not torch.equal(plane_before, model.density_plane.detach()))
