"""CycleGAN with a semantic network f_s that keeps the masks of translated images (jolibrain/joliGEN#20): to
silence an in-place error the PR runs f_s on fake_B.detach(); the reviewer notes it makes loss_sem useless:
loss_G still contains it, but it no longer reaches netG_A, so only the GAN and cycle terms train the generator."""
import torch
import torch.nn.functional as F
from torch import nn


def conv_net(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, cout, 3, padding=1))


def set_requires_grad(net, requires_grad):
    for param in net.parameters():
        param.requires_grad = requires_grad


torch.manual_seed(0)
real_A, real_B = torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)
label_A = torch.randint(0, 2, (2, 8, 8))
trained = {}
for lambda_sem in (0.0, 1.0):
    torch.manual_seed(1)
    netG_A, netG_B, netD_B, netf_s = conv_net(3, 3), conv_net(3, 3), conv_net(3, 1), conv_net(3, 2)
    optimizer_G = torch.optim.Adam(list(netG_A.parameters()) + list(netG_B.parameters()), lr=1e-3)
    optimizer_D = torch.optim.Adam(netD_B.parameters(), lr=1e-3)
    optimizer_f_s = torch.optim.Adam(netf_s.parameters(), lr=1e-3)
    for step in range(3):
        fake_B = netG_A(real_A)
        rec_A = netG_B(fake_B)
        set_requires_grad(netD_B, False)
        set_requires_grad(netf_s, False)
        loss_G_A = F.mse_loss(netD_B(fake_B), torch.ones(2, 1, 8, 8))
        loss_cycle_A = F.l1_loss(rec_A, real_A) * 10.0
        pfB = netf_s(fake_B.detach())  # <- cut_term
        loss_sem = F.cross_entropy(pfB, label_A)
        loss_G = loss_G_A + loss_cycle_A + lambda_sem * loss_sem
        optimizer_G.zero_grad()
        loss_G.backward()
        optimizer_G.step()
        set_requires_grad(netD_B, True)
        set_requires_grad(netf_s, True)
        loss_D_B = 0.5 * (F.mse_loss(netD_B(real_B), torch.ones(2, 1, 8, 8)) + F.mse_loss(netD_B(fake_B.detach()), torch.zeros(2, 1, 8, 8)))
        optimizer_D.zero_grad()
        loss_D_B.backward()
        optimizer_D.step()
        loss_f_s = F.cross_entropy(netf_s(real_A), label_A)
        optimizer_f_s.zero_grad()
        loss_f_s.backward()
        optimizer_f_s.step()
    trained[lambda_sem] = netG_A[0].weight.detach().clone()
    print(f"lambda_sem {lambda_sem}: loss_G {loss_G.item():.3f} loss_sem {loss_sem.item():.3f}")
print("loss_sem changes netG_A:", not torch.equal(trained[0.0], trained[1.0]))
