"""The fixed twin: the critic scores a detached fake_B (KupynOrest/DeblurGAN#56)."""
import torch
import torch.nn.functional as F
from torch import nn


class DiscLossWGANGP:
    def __init__(self, LAMBDA=10):
        self.LAMBDA = LAMBDA

    def calc_gradient_penalty(self, netD, real_data, fake_data):
        alpha = torch.rand(real_data.size(0), 1, 1, 1)
        interpolates = (alpha * real_data + (1 - alpha) * fake_data).requires_grad_(True)
        disc_interpolates = netD(interpolates)
        gradients = torch.autograd.grad(disc_interpolates, interpolates, torch.ones_like(disc_interpolates),
                                        create_graph=True, retain_graph=True)[0]
        return ((gradients.flatten(1).norm(2, dim=1) - 1) ** 2).mean() * self.LAMBDA

    def get_g_loss(self, net, realA, fakeB):
        return -net(fakeB).mean()

    def get_loss(self, netD, realA, fakeB, realB):
        self.D_fake = netD(fakeB.detach())
        self.D_fake = self.D_fake.mean()
        self.D_real = netD(realB).mean()
        self.loss_D = self.D_fake - self.D_real
        gradient_penalty = self.calc_gradient_penalty(netD, realB.data, fakeB.data)
        return self.loss_D + gradient_penalty


class ConditionalGAN:
    def __init__(self):
        self.netG = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 3, 3, padding=1))
        self.netD = nn.Sequential(nn.Conv2d(3, 16, 4, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(16, 1, 4))
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=1e-4, betas=(0.5, 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=1e-4, betas=(0.5, 0.999))
        self.discLoss = DiscLossWGANGP()
        self.criticUpdates = 5

    def set_input(self, blurred, sharp):
        self.real_A, self.real_B = blurred, sharp

    def forward(self):
        self.fake_B = self.netG(self.real_A)

    def backward_D(self):
        self.loss_D = self.discLoss.get_loss(self.netD, self.real_A, self.fake_B, self.real_B)
        self.loss_D.backward()

    def backward_G(self):
        self.loss_G_GAN = self.discLoss.get_g_loss(self.netD, self.real_A, self.fake_B)
        self.loss_G_Content = F.l1_loss(self.fake_B, self.real_B) * 100
        self.loss_G = self.loss_G_GAN + self.loss_G_Content
        self.loss_G.backward()

    def optimize_parameters(self):
        self.forward()
        for iter_d in range(self.criticUpdates):
            self.optimizer_D.zero_grad()
            self.backward_D()
            self.optimizer_D.step()
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()


torch.manual_seed(0)
model = ConditionalGAN()
sharp = torch.rand(4, 3, 16, 16)
for i in range(2):
    model.set_input(sharp + 0.1 * torch.randn_like(sharp), sharp)
    model.optimize_parameters()
    print(f"iter {i}: loss_D {model.loss_D.item():.4f}, loss_G {model.loss_G.item():.4f}")
