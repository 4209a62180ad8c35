"""Twin of programs/gan_requires_grad.py with one cut: the generator step's fake batch is
detached (copied from the discriminator step), so neither the adversarial nor the L1 term reaches G."""
import os

import torch
import torch.nn as nn


def set_requires_grad(nets, requires_grad=False):
    if not isinstance(nets, list):
        nets = [nets]
    for net in nets:
        if net is not None:
            for param in net.parameters():
                param.requires_grad = requires_grad


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    netG = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.InstanceNorm2d(8), nn.ReLU(True),
                         nn.Conv2d(8, 1, 3, padding=1), nn.Tanh())
    netD = nn.Sequential(nn.Conv2d(2, 8, 4, 2, 1), nn.LeakyReLU(0.2, True), nn.Conv2d(8, 1, 4, 1, 1))
    optimizer_G = torch.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_D = torch.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    criterionGAN, criterionL1 = nn.MSELoss(), nn.L1Loss()
    for step in range(3):
        real_A, real_B = torch.randn(2, 1, 16, 16), torch.randn(2, 1, 16, 16).tanh()
        # update D: G is frozen, so the fake batch carries no history into G
        set_requires_grad(netD, True)
        set_requires_grad(netG, False)
        fake_B = netG(real_A)
        optimizer_D.zero_grad()
        pred_fake = netD(torch.cat((real_A, fake_B), 1))
        pred_real = netD(torch.cat((real_A, real_B), 1))
        loss_D = 0.5 * (criterionGAN(pred_fake, torch.zeros_like(pred_fake)) + criterionGAN(pred_real, torch.ones_like(pred_real)))
        loss_D.backward()
        optimizer_D.step()
        # update G: D is frozen, gradients flow through it into G only
        set_requires_grad(netG, True)
        set_requires_grad(netD, False)
        fake_B = netG(real_A).detach()  # <- detach
        optimizer_G.zero_grad()
        pred_fake = netD(torch.cat((real_A, fake_B), 1))
        loss_G = criterionGAN(pred_fake, torch.ones_like(pred_fake)) + 10.0 * criterionL1(fake_B, real_B)
        loss_G.backward()
        optimizer_G.step()
        print(f"step {step} loss_D {loss_D.item():.6f} loss_G {loss_G.item():.6f}")
    set_requires_grad(netD, True)
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"G": netG.state_dict(), "D": netD.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
