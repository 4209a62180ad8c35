"""Stack Overflow, "How does PyTorch's loss.backward() work when "retain_graph=True" is specified?"
(read through its Chinese mirror https://whosebug.com/question/5232549/How-does-PyTorch-s-loss-backward-work-when-retain-graph-True-is-specified):
a GAN trained generator-first, then discriminator:
    optim_g.zero_grad(); loss_g.backward(); optim_g.step()
    optim_d.zero_grad(); loss_d.backward(); optim_d.step()
Symptom: loss_d.backward() raises "RuntimeError: Trying to backward through the graph a second time";
the user silenced it with loss_g.backward(retain_graph=True) and asked why two networks share one graph.
Why (the answer): loss_d is computed from netD(fake) with fake = netG(z) still attached, so loss_d's
backward runs on through the generator's graph, which loss_g.backward() already freed (and the
discriminator's loss would push gradients into G). retain_graph=True only hides that.
Fix: feed the discriminator's loss a detached fake, netD(fake.detach())."""
import torch
from torch import nn

torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
netD = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
criterion = nn.BCEWithLogitsLoss()
optim_g = torch.optim.Adam(netG.parameters(), lr=1e-3)
optim_d = torch.optim.Adam(netD.parameters(), lr=1e-3)
g_before = netG[2].weight.detach().clone()
d_before = netD[2].weight.detach().clone()

for step in range(5):
    real = torch.randn(16, 4) + 2.0
    z = torch.randn(16, 8)
    # computing loss_g and loss_d...
    fake = netG(z)
    loss_g = criterion(netD(fake), torch.ones(16, 1))
    loss_d = criterion(netD(real), torch.ones(16, 1)) + criterion(netD(fake), torch.zeros(16, 1))  # <- autograd_error

    optim_g.zero_grad()
    loss_g.backward()
    optim_g.step()

    optim_d.zero_grad()
    loss_d.backward()
    optim_d.step()
    print(f"step {step}: loss_g={loss_g.item():.4f} loss_d={loss_d.item():.4f}")

print("G changed:", not torch.equal(g_before, netG[2].weight), "D changed:", not torch.equal(d_before, netD[2].weight))
