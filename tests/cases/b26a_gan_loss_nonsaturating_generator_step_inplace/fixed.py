"""php中文网 article (a rewrite of a Q&A thread) "解决PyTorch GAN训练中的梯度计算错误:inplace操作与计算图分离",
https://php.bkmy88.com/faq/1575425.html: the user's loss_nonsaturating(d, g, x_real, *, device) computes the
discriminator loss d_loss and the generator loss g_loss from the same fake batch gz = g(z) and the same
dgz = F.sigmoid(d(gz)). Training raised "RuntimeError: one of the variables needed for gradient computation has
been modified by an inplace operation". Why: the generator is updated first (g_loss.backward(); g_optimizer.step()),
and the step writes the generator's weights in place; d_loss still reaches the generator through dgz -> gz, so its
backward needs the generator weights autograd saved in the forward, now at a newer version. The answer names the
cause as d_loss not being separated from the generator's graph.
Fix (the answer's): compute the discriminator's fake term on gz.detach(), so d_loss stops at gz and never needs the
generator's (already updated) weights. This fixed twin applies it; both networks train."""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
device = "cpu"


class Generator(nn.Module):
    def __init__(self, z_dim=8, x_dim=16):
        super().__init__()
        self.z_dim = z_dim
        self.net = nn.Sequential(nn.Linear(z_dim, 32), nn.ReLU(), nn.Linear(32, x_dim))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, x_dim=16):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(x_dim, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


def loss_nonsaturating(d, g, x_real, *, device):
    z = torch.randn(x_real.shape[0], g.z_dim, device=device)
    gz = g(z)  # fake samples from the generator
    dgz = F.sigmoid(d(gz))  # discriminator on the fakes
    dx = F.sigmoid(d(x_real))  # discriminator on the real samples
    real_label = torch.ones(x_real.shape[0], device=device)
    fake_label = torch.zeros(x_real.shape[0], device=device)
    bce_loss = nn.BCELoss()
    d_loss = bce_loss(dx, real_label) + bce_loss(F.sigmoid(d(gz.detach())), fake_label)
    g_loss = bce_loss(dgz, real_label)
    return d_loss, g_loss


g = Generator().to(device)
d = Discriminator().to(device)
g_optimizer = torch.optim.Adam(g.parameters(), lr=1e-3)
d_optimizer = torch.optim.Adam(d.parameters(), lr=1e-3)
data = [torch.randn(16, 16) * 0.5 + 1.0 for _ in range(4)]  # stands in for the real data loader
g_before = g.net[2].weight.detach().clone()
d_before = d.net[2].weight.detach().clone()

for epoch in range(2):
    for x_real in data:
        d_loss, g_loss = loss_nonsaturating(d, g, x_real, device=device)
        g_optimizer.zero_grad()
        g_loss.backward(retain_graph=True)
        g_optimizer.step()
        d_optimizer.zero_grad()
        d_loss.backward()
        d_optimizer.step()

print("generator changed:", not torch.equal(g_before, g.net[2].weight))
print("discriminator changed:", not torch.equal(d_before, d.net[2].weight))
