"""The fixed twin: backward_G uses the stored real prediction detached, a constant for the generator step, so
its loss has a graph of its own (Zhaoyi-Yan/Shift-Net_pytorch#34)."""
import torch
import torch.nn.functional as F
from torch import nn


class ShiftNetModel:
    def __init__(self):
        self.netG = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 3, 3, padding=1), nn.Tanh())
        self.netD = nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(8, 1, 4, 2, 1))
        self.optimizer_G = torch.optim.Adam(self.netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.optimizer_D = torch.optim.Adam(self.netD.parameters(), lr=2e-4, betas=(0.5, 0.999))

    def set_input(self, real_B, mask):
        self.real_B, self.real_A = real_B, real_B * (1 - mask)

    def backward_D(self):
        self.pred_fake = self.netD(self.fake_B.detach())
        self.pred_real = self.netD(self.real_B)
        self.loss_D = (F.binary_cross_entropy_with_logits(self.pred_real - self.pred_fake.mean(), torch.ones_like(self.pred_real))
                       + F.binary_cross_entropy_with_logits(self.pred_fake - self.pred_real.mean(), torch.zeros_like(self.pred_fake))) / 2
        self.loss_D.backward()

    def backward_G(self):
        pred_fake = self.netD(self.fake_B)
        pred_real = self.pred_real.detach()
        self.loss_G_GAN = (F.binary_cross_entropy_with_logits(pred_real - pred_fake.mean(), torch.zeros_like(pred_real))
                           + F.binary_cross_entropy_with_logits(pred_fake - pred_real.mean(), torch.ones_like(pred_fake))) / 2
        self.loss_G = self.loss_G_GAN * 0.2 + F.l1_loss(self.fake_B, self.real_B) * 100
        self.loss_G.backward()

    def optimize_parameters(self):
        self.fake_B = self.netG(self.real_A)
        self.optimizer_D.zero_grad()
        self.backward_D()
        self.optimizer_D.step()
        self.optimizer_G.zero_grad()
        self.backward_G()
        self.optimizer_G.step()


torch.manual_seed(0)
model = ShiftNetModel()
mask = torch.zeros(1, 1, 16, 16)
mask[..., 4:12, 4:12] = 1
for it in range(3):
    model.set_input(torch.rand(4, 3, 16, 16) * 2 - 1, mask)
    model.optimize_parameters()
    print(f"iter {it}: loss_D {model.loss_D.item():.4f} loss_G {model.loss_G.item():.4f}")
