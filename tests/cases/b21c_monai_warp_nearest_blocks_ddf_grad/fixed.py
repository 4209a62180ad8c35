"""MONAI (Project-MONAI/MONAI#8540, https://github.com/Project-MONAI/MONAI/issues/8540): a spatial transformer
(registration) network whose dense displacement field (DDF) warps the moving label through
monai.networks.blocks.Warp(mode="nearest") does not train: the weights never change. The reporter found the
cause after days: nearest-neighbour warping is non-differentiable. The maintainer-side reply (Kheil-Z, docs PR
#8629) states it exactly: grid_sample in nearest mode gives zero gradient to the sampling grid almost everywhere,
so no learning signal reaches the DDF or the network.
Fix (from the thread): warp the (one-hot) mask with bilinear / trilinear interpolation and compute the loss on the
resulting soft maps; keep nearest only for evaluation."""
import torch
import torch.nn.functional as F
from torch import nn


# --- monai.networks.blocks.Warp (pytorch-native branch, USE_COMPILED=False), cut down ---
class Warp(nn.Module):
    def __init__(self, mode="bilinear", padding_mode="border"):
        super().__init__()
        self._interp_mode = mode
        self._padding_mode = padding_mode

    def get_reference_grid(self, ddf):
        mesh_points = [torch.arange(0, dim) for dim in ddf.shape[2:]]
        grid = torch.stack(torch.meshgrid(*mesh_points, indexing="ij"), dim=0)  # (spatial_dims, ...)
        return torch.stack([grid] * ddf.shape[0], dim=0).to(ddf)  # (batch, spatial_dims, ...)

    def forward(self, image, ddf):
        spatial_dims = len(image.shape) - 2
        grid = self.get_reference_grid(ddf) + ddf
        grid = grid.permute([0] + list(range(2, 2 + spatial_dims)) + [1])  # (batch, ..., spatial_dims)
        for i, dim in enumerate(grid.shape[1:-1]):
            grid[..., i] = grid[..., i] * 2 / (dim - 1) - 1
        index_ordering = list(range(spatial_dims - 1, -1, -1))
        grid = grid[..., index_ordering]  # z, y, x -> x, y, z
        return F.grid_sample(image, grid, mode=self._interp_mode, padding_mode=self._padding_mode, align_corners=True)


def dice_loss(pred, target, smooth=1e-5):
    """monai.losses.DiceLoss(sigmoid=False), foreground channel only."""
    intersection = (pred * target).sum(dim=(2, 3))
    denominator = pred.sum(dim=(2, 3)) + target.sum(dim=(2, 3))
    return (1.0 - (2.0 * intersection + smooth) / (denominator + smooth)).mean()


class RegNet(nn.Module):
    """A small stand-in for monai.networks.nets.LocalNet: (moving, fixed) -> DDF."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(2, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 2, 3, padding=1)

    def forward(self, x):
        return self.conv2(torch.relu(self.conv1(x)))


torch.manual_seed(0)
moving_label = torch.zeros(2, 1, 16, 16)
moving_label[:, :, 4:10, 4:10] = 1.0
fixed_label = torch.zeros(2, 1, 16, 16)
fixed_label[:, :, 6:12, 6:12] = 1.0
moving_image = moving_label + 0.1 * torch.randn(2, 1, 16, 16)
fixed_image = fixed_label + 0.1 * torch.randn(2, 1, 16, 16)

model = RegNet()
warp_layer = Warp(mode="bilinear", padding_mode="border")
optimizer = torch.optim.Adam(model.parameters(), 1e-2)
before = model.conv1.weight.detach().clone()
for step in range(5):
    optimizer.zero_grad()
    ddf = model(torch.cat((moving_image, fixed_image), dim=1))
    pred_label = warp_layer(moving_label, ddf)
    loss = dice_loss(pred_label, fixed_label)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f} |grad conv1| {model.conv1.weight.grad.abs().sum().item():.3e}")
print("weights changed:", not torch.equal(before, model.conv1.weight))
