"""The fixed twin: the latent loss takes the discriminator features of the fake image without detaching it, so
err_g_lat trains the generator (samet-akcay/skip-ganomaly#5)."""
import torch
import torch.nn.functional as F
from torch import nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 8, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(8, 16, 4, 2, 1), nn.LeakyReLU(0.2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 4 * 4, 1), nn.Sigmoid())

    def forward(self, x):
        feat = self.features(x)
        return self.classifier(feat), feat


def train_generator(w_lat, steps=5):
    torch.manual_seed(1)
    netg = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1), nn.Tanh())
    netd = Discriminator()
    optimizer_g = torch.optim.Adam(netg.parameters(), lr=2e-3, betas=(0.5, 0.999))
    images = torch.rand(8, 1, 16, 16) * 2 - 1
    for _ in range(steps):
        fake = netg(images)
        pred_fake, _ = netd(fake)
        _, feat_real = netd(images)
        _, feat_fake = netd(fake)
        err_g_adv = F.binary_cross_entropy(pred_fake, torch.ones_like(pred_fake))
        err_g_con = F.l1_loss(fake, images)
        err_g_lat = F.mse_loss(feat_fake, feat_real)
        err_g = err_g_adv * 1 + err_g_con * 40 + err_g_lat * w_lat
        optimizer_g.zero_grad()
        err_g.backward()
        optimizer_g.step()
    return netg[0].weight.detach().clone()


print("w_lat changes the generator:", not torch.equal(train_generator(w_lat=0.0), train_generator(w_lat=50.0)))
