"""The fixed twin: the R1/R2 penalties stay attached (brownvc/R3GAN#20), so they regularize the discriminator."""
import torch
import torch.nn.functional as F
from torch import nn


def ZeroCenteredGradientPenalty(Samples, Critics):
    Gradient, = torch.autograd.grad(outputs=Critics.sum(), inputs=Samples, create_graph=True)
    return Gradient.square().sum(1)


torch.manual_seed(0)
Generator = nn.Sequential(nn.Linear(8, 32), nn.LeakyReLU(0.2), nn.Linear(32, 16))
Discriminator = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
OptG = torch.optim.Adam(Generator.parameters(), lr=2e-4, betas=(0.0, 0.99))
OptD = torch.optim.Adam(Discriminator.parameters(), lr=2e-4, betas=(0.0, 0.99))
Gamma = 10.0
for step in range(3):
    Noise, RealSamples = torch.randn(32, 8), torch.randn(32, 16)
    RealSamples = RealSamples.detach().requires_grad_(True)
    FakeSamples = Generator(Noise).detach().requires_grad_(True)
    RealLogits, FakeLogits = Discriminator(RealSamples), Discriminator(FakeSamples)
    R1Penalty = ZeroCenteredGradientPenalty(RealSamples, RealLogits)
    R2Penalty = ZeroCenteredGradientPenalty(FakeSamples, FakeLogits)
    AdversarialLoss = F.softplus(-(RealLogits - FakeLogits).squeeze(1))
    DiscriminatorLoss = AdversarialLoss + (Gamma / 2) * (R1Penalty + R2Penalty)
    OptD.zero_grad()
    DiscriminatorLoss.mean().backward()
    OptD.step()

    Discriminator.requires_grad_(False)
    FakeLogits = Discriminator(Generator(Noise))
    GeneratorLoss = F.softplus(-(FakeLogits - Discriminator(RealSamples.detach()))).mean()
    OptG.zero_grad()
    GeneratorLoss.backward()
    OptG.step()
    Discriminator.requires_grad_(True)
    print(f"step {step}: R1 {R1Penalty.mean().item():.4f} R2 {R2Penalty.mean().item():.4f} "
          f"penalties require grad: {R1Penalty.requires_grad}")
pen = ZeroCenteredGradientPenalty(RealSamples, Discriminator(RealSamples)).mean()
grads = torch.autograd.grad(pen, [Discriminator[0].weight, Discriminator[2].weight])
assert all(g.abs().sum() > 0 for g in grads), "R1 must reach the discriminator weights"
print("R1 reaches the discriminator: True")
