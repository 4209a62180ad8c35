"""The fixed twin: the generator's adversarial and latent terms use the discriminator on the fake itself; the
discriminator's own loss runs it on the detached fake (samet-akcay/skip-ganomaly#5)."""
import torch
import torch.nn.functional as F
from torch import nn


class SkipGanomaly:
    def __init__(self):
        self.netg = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(8, 3, 3, padding=1), nn.Tanh())
        self.features = nn.Sequential(nn.Conv2d(3, 8, 4, stride=2, padding=1), nn.LeakyReLU(0.2))
        self.classifier = nn.Sequential(nn.Conv2d(8, 1, 8), nn.Flatten(), nn.Sigmoid())
        self.optimizer_g = torch.optim.Adam(self.netg.parameters(), lr=2e-4, betas=(0.5, 0.999))
        self.optimizer_d = torch.optim.Adam(list(self.features.parameters()) + list(self.classifier.parameters()),
                                            lr=2e-4, betas=(0.5, 0.999))
        self.w_adv, self.w_con, self.w_lat = 1.0, 50.0, 1.0

    def netd(self, x):
        feat = self.features(x)
        return self.classifier(feat), feat

    def optimize_params(self, input):
        self.fake = self.netg(input)
        self.pred_real, self.feat_real = self.netd(input)
        self.pred_fake, self.feat_fake = self.netd(self.fake)
        self.optimizer_g.zero_grad()
        self.err_g_adv = self.w_adv * F.binary_cross_entropy(self.pred_fake, torch.ones_like(self.pred_fake))
        self.err_g_con = self.w_con * F.l1_loss(self.fake, input)
        self.err_g_lat = self.w_lat * F.mse_loss(self.feat_fake, self.feat_real)
        self.err_g = self.err_g_adv + self.err_g_con + self.err_g_lat
        self.lat_grad = torch.autograd.grad(self.err_g_lat, self.netg[0].weight, retain_graph=True, allow_unused=True)[0]
        self.err_g.backward(retain_graph=True)
        self.optimizer_g.step()
        self.optimizer_d.zero_grad()
        self.err_d = (F.binary_cross_entropy(self.pred_real, torch.ones_like(self.pred_real))
                      + F.binary_cross_entropy(self.netd(self.fake.detach())[0], torch.zeros_like(self.pred_fake)))
        self.err_d.backward()
        self.optimizer_d.step()


torch.manual_seed(0)
model = SkipGanomaly()
for step in range(3):
    model.optimize_params(torch.rand(4, 3, 16, 16) * 2 - 1)
print(f"generator grad from the latent term set: {model.lat_grad is not None}")
