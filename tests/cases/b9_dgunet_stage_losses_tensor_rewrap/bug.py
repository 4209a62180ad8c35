"""DGUNet's deblurring training (MC-E/Deep-Generalized-Unfolding-Networks-for-Image-Restoration#6): np.sum over the
per-stage losses failed on CUDA tensors, so the reporter rebuilt the sums as torch.tensor([...],
requires_grad=True).sum(); that makes new leaves from the loss values, the network gets no gradient and "the psnr
will not change during training" (the fix stacks the stage losses)."""
import torch
import torch.nn.functional as F
from torch import nn


def charbonnier(x, y, eps=1e-3):
    return torch.sqrt((x - y) ** 2 + eps ** 2).mean()


def edge_loss(x, y):
    dx = lambda t: t[..., :, 1:] - t[..., :, :-1]
    return charbonnier(dx(x), dx(y))


class Unfolding(nn.Module):
    def __init__(self, stages=3):
        super().__init__()
        self.stages = nn.ModuleList(nn.Conv2d(3, 3, 3, padding=1) for _ in range(stages))

    def forward(self, x):
        restored = []
        for stage in self.stages:
            x = x + stage(x)
            restored.append(x)
        return restored[::-1]


torch.manual_seed(0)
model = Unfolding()
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
target = torch.rand(2, 3, 16, 16)
blurred = F.avg_pool2d(target, 3, stride=1, padding=1)
for step in range(40):
    restored = model(blurred)
    loss_char = torch.tensor([charbonnier(restored[j], target) for j in range(len(restored))], requires_grad=True).sum()  # <- tensor_rewrap
    loss_edge = torch.tensor([edge_loss(restored[j], target) for j in range(len(restored))], requires_grad=True).sum()
    loss = loss_char + 0.05 * loss_edge
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 13 == 0 or step == 39:
        psnr = 10 * torch.log10(1 / F.mse_loss(restored[0].detach(), target))
        print(f"step {step}: PSNR {psnr.item():.3f}")
