"""Progressive GAN with the GDPP diversity loss enabled (facebookresearch/pytorch_GAN_zoo#83): the generator step
calls lossGFake.backward() and then GDPPLoss(..., backward=True) on the discriminator features of the same fake
batch; the first backward already freed that graph, so training raises "Trying to backward through the graph a
second time" (fixed in #85 by lossGFake.backward(retain_graph=True))."""
import torch
import torch.nn.functional as F
from torch import nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(12, 16), nn.LeakyReLU(0.2))
        self.decision = nn.Linear(16, 1)

    def forward(self, x, getFeature=False):
        phi = self.features(x)
        return (self.decision(phi), phi) if getFeature else self.decision(phi)


def GDPPLoss(phiFake, phiReal, backward=True):
    def eig(phi):
        phi = F.normalize(phi, p=2, dim=1)
        return torch.linalg.eigh(phi.t() @ phi)

    fake_vals, fake_vecs = eig(phiFake)
    real_vals, real_vecs = eig(phiReal)
    real_vals = real_vals / real_vals.sum()
    fake_vals = fake_vals / fake_vals.sum()
    weights = real_vals.detach()
    loss = F.mse_loss(fake_vals, real_vals) - (weights * F.cosine_similarity(real_vecs, fake_vecs, dim=0).abs()).sum()
    if backward:
        loss.backward()
    return loss.item()


torch.manual_seed(0)
netG = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 12))
netD = Discriminator()
optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-3)
optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-3)
real_input = torch.randn(16, 12)
for step in range(3):
    optimizerD.zero_grad()
    predRealD = netD(real_input)
    predFakeD = netD(netG(torch.randn(16, 8)).detach())
    lossD = F.softplus(-predRealD).mean() + F.softplus(predFakeD).mean()
    lossD.backward()
    optimizerD.step()

    optimizerG.zero_grad()
    optimizerD.zero_grad()
    predFakeG, phiGFake = netD(netG(torch.randn(16, 8)), True)
    lossGFake = F.softplus(-predFakeG).mean()
    lossGFake.backward()  # <- autograd_error
    _, phiDReal = netD(real_input, True)
    lossGGDPP = GDPPLoss(phiGFake, phiDReal, backward=True)
    optimizerG.step()
    print(f"step {step}: lossD {lossD.item():.4f} lossG {lossGFake.item():.4f} gdpp {lossGGDPP:.4f}")
