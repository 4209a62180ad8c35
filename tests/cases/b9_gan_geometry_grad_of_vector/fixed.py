"""The fixed twin: the gradient of the mean activation (Animadversio/GAN-Geometry#4)."""
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 3 * 8 * 8))
unit = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
for p in [*G.parameters(), *unit.parameters()]:
    p.requires_grad_(False)
z = torch.randn(1, 8)
for it in range(5):
    perturb_vecs = (z + 0.01 * torch.randn(4, 8)).requires_grad_(True)
    img = G(perturb_vecs).view(-1, 3, 8, 8)
    activs = unit(img)[:, 0, 2, 2]
    ftgrad = torch.autograd.grad(activs.mean(), perturb_vecs, retain_graph=False, create_graph=False)[0]
    z = z + 0.5 * ftgrad.mean(0, keepdim=True)
    print(f"iter {it}: activation {activs.mean().item():.4f}")
