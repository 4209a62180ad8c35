"""CSA-CDGAN's training step (wangle53/CSA-CDGAN#5): the generator's adversarial term scores the fake
change map with `netd(fake).detach()`, so it reaches no generator weight; only the L1 term trains G."""
import torch
from torch import nn


class NetG(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 3, padding=1),
                                 nn.Sigmoid())

    def forward(self, x):
        return self.net(x)


class NetD(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.LeakyReLU(0.2), nn.Flatten(),
                                 nn.Linear(8 * 4 * 4, 1), nn.Sigmoid())

    def forward(self, x):
        return self.net(x).view(-1)


torch.manual_seed(0)
netg, netd = NetG(), NetD()
l_con, l_bce = nn.L1Loss(), nn.BCELoss()
optimizer_d = torch.optim.Adam(netd.parameters(), lr=2e-4, betas=(0.5, 0.999))
optimizer_g = torch.optim.Adam(netg.parameters(), lr=2e-4, betas=(0.5, 0.999))
x1, x2 = torch.rand(4, 3, 8, 8), torch.rand(4, 3, 8, 8)
gt = (torch.rand(4, 1, 8, 8) > 0.7).float()
G_WEIGHT, D_WEIGHT = 200, 1
for step in range(3):
    x = torch.cat((x1, x2), 1)
    real_label, fake_label = torch.ones(4), torch.zeros(4)
    fake = netg(x)
    pred_real = netd(gt)
    pred_fake = netd(fake).detach()  # <- cut_term
    err_d_fake = l_bce(pred_fake, fake_label)
    err_g = l_con(fake, gt)
    err_g_total = G_WEIGHT * err_g + D_WEIGHT * err_d_fake
    pred_fake_ = netd(fake.detach())
    err_d_real = l_bce(pred_real, real_label)
    err_d_fake_ = l_bce(pred_fake_, fake_label)
    err_d_total = (err_d_real + err_d_fake_) * 0.5
    optimizer_g.zero_grad()
    err_g_total.backward(retain_graph=True)
    optimizer_g.step()
    optimizer_d.zero_grad()
    err_d_total.backward()
    optimizer_d.step()
    print(f"step {step}: G loss {err_g_total.item():.4f} (adv {err_d_fake.item():.4f}) D loss {err_d_total.item():.4f}")
