"""The fixed twin: the perceptual term is computed with grad enabled (the frozen VGG keeps requires_grad=False)
(junyanz/pytorch-CycleGAN-and-pix2pix#822)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
netG_A = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))
netG_B = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 3, padding=1))
vgg = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1)).eval()
for p in vgg.parameters():
    p.requires_grad_(False)
optimizer_G = torch.optim.Adam([*netG_A.parameters(), *netG_B.parameters()], lr=2e-3)
real_A, real_B = torch.rand(4, 3, 16, 16), torch.rand(4, 3, 16, 16)
for step in range(60):
    loss_cycle = F.l1_loss(netG_A(netG_B(real_B)), real_B)
    perceptual = F.mse_loss(vgg(netG_B(netG_A(real_A))), vgg(real_A))
    loss_G = 0.01 * loss_cycle + 10.0 * perceptual
    optimizer_G.zero_grad()
    loss_G.backward()
    optimizer_G.step()
    if step % 20 == 0 or step == 59:
        print(f"step {step}: perceptual {perceptual.item():.5f}")
