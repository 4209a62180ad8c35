"""DIG's SphereNet (divelab/DIG#164, also #103): building the model fails with "RuntimeError: a leaf Variable
that requires grad is being used in an in-place operation." because the radial basis `dist_emb` initialises its
learnable frequencies with `torch.arange(1, self.freq.numel() + 1, out=self.freq).mul_(PI)`, an in-place write
into a Parameter while grad mode is on; torch 2.x refuses the same line with "functions with out=... arguments
don't support automatic differentiation" (the fix used by DGL's DimeNet: do it under torch.no_grad())."""
import math

import torch
import torch.nn.functional as F
from torch import nn

PI = math.pi


class Envelope(nn.Module):
    def __init__(self, exponent):
        super().__init__()
        self.p = exponent + 1
        self.a, self.b, self.c = -(self.p + 1) * (self.p + 2) / 2, self.p * (self.p + 2), -self.p * (self.p + 1) / 2

    def forward(self, x):
        p = self.p
        return 1. / x + self.a * x.pow(p - 1) + self.b * x.pow(p) + self.c * x.pow(p + 1)


class dist_emb(nn.Module):
    def __init__(self, num_radial, cutoff=5.0, envelope_exponent=5):
        super().__init__()
        self.cutoff = cutoff
        self.envelope = Envelope(envelope_exponent)
        self.freq = nn.Parameter(torch.Tensor(num_radial))
        self.reset_parameters()

    def reset_parameters(self):
        torch.arange(1, self.freq.numel() + 1, out=self.freq).mul_(PI)  # <- autograd_error

    def forward(self, dist):
        dist = dist.unsqueeze(-1) / self.cutoff
        return self.envelope(dist) * (self.freq * dist).sin()


class TinySphereNet(nn.Module):
    def __init__(self, num_radial=6, hidden=16):
        super().__init__()
        self.dist_emb = dist_emb(num_radial)
        self.lin = nn.Sequential(nn.Linear(num_radial, hidden), nn.SiLU(), nn.Linear(hidden, 1))

    def forward(self, dist, batch, num_graphs):
        e = self.lin(self.dist_emb(dist)).squeeze(-1)
        return torch.zeros(num_graphs).index_add(0, batch, e)


torch.manual_seed(0)
model = TinySphereNet()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
dist, batch, target = torch.rand(20) * 4 + 0.5, torch.arange(4).repeat_interleave(5), torch.randn(4)
freq_before = model.dist_emb.freq.detach().clone()
for step in range(3):
    optimizer.zero_grad()
    loss = F.l1_loss(model(dist, batch, 4), target)
    loss.backward()
    optimizer.step()
print(f"freq learned: {not torch.equal(model.dist_emb.freq, freq_before)}")
