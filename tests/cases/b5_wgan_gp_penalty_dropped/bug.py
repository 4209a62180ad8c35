"""WGAN-GP for 1D signals (LixiangHan/GANs-for-1D-Signal#7): the gradient penalty is computed, with
create_graph, every critic step, but never added to loss_D, so it trains nothing."""
import torch
import torch.autograd as autograd
import torch.optim as optim
from torch import nn


class Generator(nn.Module):
    def __init__(self, nz):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(nz, 32), nn.ReLU(), nn.Linear(32, 16), nn.Tanh())

    def forward(self, x):
        return self.main(x)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))

    def forward(self, x):
        return self.main(x)


p_coeff, n_critic, lr, b_size, nz = 10, 5, 1e-4, 8, 10
torch.manual_seed(0)
netD, netG = Discriminator(), Generator(nz)
optimizerD = optim.RMSprop(netD.parameters(), lr=lr)
optimizerG = optim.RMSprop(netG.parameters(), lr=lr)
signals = torch.sin(torch.linspace(0, 6.28, 16) + torch.rand(b_size, 1) * 6.28)
for step in range(6):
    real_cpu = signals
    netD.zero_grad()
    noise = torch.randn(b_size, nz)
    fake = netG(noise)
    eps = torch.Tensor(b_size, 1).uniform_(0, 1)
    x_p = eps * real_cpu + (1 - eps) * fake
    grad = autograd.grad(netD(x_p).mean(), x_p, create_graph=True, retain_graph=True)[0].view(b_size, -1)
    grad_norm = torch.norm(grad, 2, 1)
    grad_penalty = p_coeff * torch.pow(grad_norm - 1, 2)
    loss_D = torch.mean(netD(fake) - netD(real_cpu))  # <- cut_term
    loss_D.backward()
    optimizerD.step()
    for p in netD.parameters():
        p.data.clamp_(-0.01, 0.01)
    if step % n_critic == 0:
        noise = torch.randn(b_size, nz)
        netG.zero_grad()
        fake = netG(noise)
        loss_G = -torch.mean(netD(fake))
        netD.zero_grad()
        netG.zero_grad()
        loss_G.backward()
        optimizerG.step()
    print(f"step {step}: Loss_D {loss_D.item():.4f} Loss_G {loss_G.item():.4f} penalty {grad_penalty.mean().item():.4f}")
