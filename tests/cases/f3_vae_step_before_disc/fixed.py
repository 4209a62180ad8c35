import torch
from torch import nn
import torch.nn.functional as F

torch.manual_seed(0)
encoder = nn.Sequential(nn.Linear(10, 8), nn.ReLU(), nn.Linear(8, 4))
decoder = nn.Linear(4, 10)
disc = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 2))
optim_vae = torch.optim.Adam([*encoder.parameters(), *decoder.parameters()], lr=1e-3)
optim_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
x = torch.randn(16, 10)
zeros, ones = torch.zeros(16, dtype=torch.long), torch.ones(16, dtype=torch.long)
z = encoder(x)
d_z = disc(z)
vae_loss = F.mse_loss(decoder(z), x) + (d_z[:, 0] - d_z[:, 1]).mean()
optim_vae.zero_grad()
vae_loss.backward(retain_graph=True)
z_perm = z[torch.randperm(16)].detach()
d_tc_loss = 0.5 * (F.cross_entropy(disc(z.detach()), zeros) + F.cross_entropy(disc(z_perm), ones))
optim_d.zero_grad()
d_tc_loss.backward()
optim_vae.step()
optim_d.step()
