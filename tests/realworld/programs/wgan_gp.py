"""WGAN-GP: n_critic critic steps with a gradient penalty computed by autograd.grad on interpolates
(x_hat.requires_grad_(True)), then a generator step; RMSprop/Adam with betas as in the paper."""
import os

import torch
import torch.nn as nn
from torch import autograd

LAMBDA = 10


def make_generator():
    return nn.Sequential(nn.Linear(4, 32), nn.ReLU(True), nn.Linear(32, 32), nn.ReLU(True), nn.Linear(32, 2))


def make_critic():
    return nn.Sequential(nn.Linear(2, 32), nn.ReLU(True), nn.Linear(32, 32), nn.ReLU(True), nn.Linear(32, 1))


def calc_gradient_penalty(netD, real_data, fake_data):
    alpha = torch.rand(real_data.size(0), 1)
    alpha = alpha.expand(real_data.size())
    interpolates = alpha * real_data + ((1 - alpha) * fake_data)
    interpolates.requires_grad_(True)
    disc_interpolates = netD(interpolates)
    gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                              grad_outputs=torch.ones(disc_interpolates.size()),
                              create_graph=True, retain_graph=True, only_inputs=True)[0]
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA


def main():
    torch.manual_seed(1)
    torch.set_num_threads(1)
    netG, netD = make_generator(), make_critic()
    optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-4, betas=(0.5, 0.9))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-4, betas=(0.5, 0.9))
    one = torch.tensor(1, dtype=torch.float)
    mone = one * -1
    for iteration in range(3):
        for p in netD.parameters():
            p.requires_grad = True
        for iter_d in range(3):
            real_data = torch.randn(16, 2) * 0.5 + 1.0
            netD.zero_grad()
            D_real = netD(real_data).mean()
            D_real.backward(mone)
            noise = torch.randn(16, 4)
            with torch.no_grad():
                fake = netG(noise)
            D_fake = netD(fake).mean()
            D_fake.backward(one)
            gradient_penalty = calc_gradient_penalty(netD, real_data, fake)
            gradient_penalty.backward()
            D_cost = D_fake - D_real + gradient_penalty
            Wasserstein_D = D_real - D_fake
            optimizerD.step()
        for p in netD.parameters():
            p.requires_grad = False
        netG.zero_grad()
        fake = netG(torch.randn(16, 4))
        G = netD(fake).mean()
        G.backward(mone)
        G_cost = -G
        optimizerG.step()
        print(f"iter {iteration} D_cost {D_cost.item():.5f} G_cost {G_cost.item():.5f} W {Wasserstein_D.item():.5f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({"G": netG.state_dict(), "D": netD.state_dict()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
