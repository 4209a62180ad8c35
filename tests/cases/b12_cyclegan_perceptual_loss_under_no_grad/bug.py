"""CycleGAN with a perceptual loss (junyanz/pytorch-CycleGAN-and-pix2pix#822): the recipe posted for adding a VGG
perceptual loss to `backward_G` computes the cycle reconstructions `rx`, `ry` and all VGG features inside
`with torch.no_grad():`, then adds the perceptual term to `loss_G`. The cycle term still trains both generators; the
perceptual term is a constant that adds nothing to their update (only the real images' features belong under no_grad)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)


def generator():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1), nn.Tanh())


netG_A, netG_B = generator(), generator()
vgg = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1)).eval()
vgg.requires_grad_(False)
optimizer_G = torch.optim.Adam(list(netG_A.parameters()) + list(netG_B.parameters()), lr=2e-4, betas=(0.5, 0.999))
real_A, real_B = torch.rand(2, 3, 16, 16) * 2 - 1, torch.rand(2, 3, 16, 16) * 2 - 1
lambda_cycle, lambda_perc = 10.0, 1.0
for step in range(3):
    optimizer_G.zero_grad()
    rec_A, rec_B = netG_B(netG_A(real_A)), netG_A(netG_B(real_B))
    loss_cycle = F.l1_loss(rec_A, real_A) + F.l1_loss(rec_B, real_B)
    with torch.no_grad():
        rx = netG_B(netG_A(real_A))  # <- cut_term
        ry = netG_A(netG_B(real_B))
        fx, fy = vgg(real_A), vgg(real_B)
        frx, fry = vgg(rx), vgg(ry)
    loss_perc = F.mse_loss(frx, fx) + F.mse_loss(fry, fy)
    loss_G = lambda_cycle * loss_cycle + lambda_perc * loss_perc
    loss_G.backward()
    optimizer_G.step()
print(f"perceptual term requires grad: {loss_perc.requires_grad} (value {loss_perc.item():.4f})")
