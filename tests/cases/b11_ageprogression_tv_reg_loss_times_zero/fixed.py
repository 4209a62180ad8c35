"""The fixed twin: the total-variation term is weighted by a positive factor (mattans/AgeProgression#20)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
E = nn.Sequential(nn.Conv2d(3, 8, 4, stride=2, padding=1), nn.Tanh(), nn.Flatten(), nn.Linear(8 * 8 * 8, 20))
G = nn.Sequential(nn.Linear(20 + 4, 8 * 8 * 8), nn.Unflatten(1, (8, 8, 8)),
                  nn.ConvTranspose2d(8, 3, 4, stride=2, padding=1), nn.Tanh())
eg_optimizer = torch.optim.Adam([*E.parameters(), *G.parameters()], lr=2e-4)
images, ages = torch.rand(4, 3, 16, 16) * 2 - 1, F.one_hot(torch.randint(0, 4, (4,)), 4).float()
for epoch in range(2):
    z = E(images)
    generated = G(torch.cat([z, ages], 1))
    eg_loss = F.l1_loss(generated, images)
    reg = (F.l1_loss(generated[:, :, :, :-1], generated[:, :, :, 1:])
           + F.l1_loss(generated[:, :, :-1, :], generated[:, :, 1:, :]))
    reg_loss = 0.1 * reg
    loss = eg_loss + reg_loss
    tv_grad, = torch.autograd.grad(reg_loss, generated, retain_graph=True)
    eg_optimizer.zero_grad()
    loss.backward()
    eg_optimizer.step()
    print(f"epoch {epoch}: reg {reg.item():.4f}, reg_loss {reg_loss.item():.4f}, "
          f"the term's gradient on the image is all zero: {not tv_grad.any()}")
