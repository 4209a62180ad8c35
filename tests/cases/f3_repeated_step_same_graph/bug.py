"""Several generator steps on one graph (tamarott/SinGAN#126): the second backward needs the weights the
first step() changed."""
import torch
from torch import nn

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6))
optimizerG = torch.optim.Adam(netG.parameters(), lr=5e-4)
noise, target = torch.randn(4, 6), torch.randn(4, 6)
fake = netG(noise)
errG = nn.functional.mse_loss(fake, target)
for j in range(3):
    optimizerG.zero_grad()
    errG.backward(retain_graph=True)  # <- symptom
    optimizerG.step()  # <- inplace_saved
