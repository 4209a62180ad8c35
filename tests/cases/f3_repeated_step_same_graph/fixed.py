import torch
from torch import nn

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6))
optimizerG = torch.optim.Adam(netG.parameters(), lr=5e-4)
noise, target = torch.randn(4, 6), torch.randn(4, 6)
for j in range(3):
    fake = netG(noise)
    errG = nn.functional.mse_loss(fake, target)
    optimizerG.zero_grad()
    errG.backward()
    optimizerG.step()
