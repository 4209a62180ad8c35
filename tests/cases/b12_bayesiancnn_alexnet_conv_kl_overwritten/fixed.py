"""PyTorch-BayesianCNN's BayesianAlexNet (kumar-shridhar/PyTorch-BayesianCNN#25): `probforward` takes `x, _kl =
layer.convprobforward(x)` for every Bayesian conv layer but never adds `_kl` to `kl`; the classifier's
`x, _kl = self.classifier.fcprobforward(x)` overwrites it, so the ELBO carries only the fully connected layer's KL
and the conv layers' posteriors are never pulled toward the prior (confirmed as a bug; BayesianAlexNet_.py sums it)."""
import math

import torch
import torch.nn.functional as F
from torch import nn


class BBBConv2d(nn.Module):
    def __init__(self, cin, cout, k, prior_var=0.05):
        super().__init__()
        self.qw_mean = nn.Parameter(torch.randn(cout, cin, k, k) * 0.1)
        self.log_alpha = nn.Parameter(torch.full((cout, cin, k, k), -3.0))
        self.prior_var, self.padding = prior_var, k // 2

    def kl(self):
        var = self.log_alpha.exp() * self.qw_mean.pow(2) + 1e-8
        return 0.5 * (var / self.prior_var + self.qw_mean.pow(2) / self.prior_var - 1 - (var / self.prior_var).log()).sum()

    def convprobforward(self, x):
        mean = F.conv2d(x, self.qw_mean, padding=self.padding)
        std = torch.sqrt(1e-8 + F.conv2d(x.pow(2), self.log_alpha.exp() * self.qw_mean.pow(2), padding=self.padding))
        return mean + std * torch.randn_like(std), self.kl()


class BBBLinear(BBBConv2d):
    def __init__(self, fin, fout):
        super().__init__(fin, fout, 1)

    def fcprobforward(self, x):
        out, kl = self.convprobforward(x[:, :, None, None])
        return out.flatten(1), kl


class BBBAlexNet(nn.Module):
    def __init__(self, outputs=10):
        super().__init__()
        self.layers = nn.ModuleList([BBBConv2d(3, 8, 3), nn.Softplus(), nn.MaxPool2d(2), BBBConv2d(8, 16, 3),
                                     nn.Softplus(), nn.MaxPool2d(2)])
        self.classifier = BBBLinear(16 * 4 * 4, outputs)

    def probforward(self, x):
        kl = 0
        for layer in self.layers:
            if hasattr(layer, 'convprobforward') and callable(layer.convprobforward):
                x, _kl, = layer.convprobforward(x)
                kl += _kl
            else:
                x = layer.forward(x)
        x = x.view(x.size(0), -1)
        x, _kl = self.classifier.fcprobforward(x)
        kl += _kl
        return x, kl


torch.manual_seed(0)
net = BBBAlexNet()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
x, y = torch.rand(8, 3, 16, 16), torch.randint(0, 10, (8,))
before = {n: p.detach().clone() for n, p in net.named_parameters()}
for step in range(2):
    logits, kl = net.probforward(x)
    loss = F.cross_entropy(logits, y) + kl / 1000  # ELBO with beta = 1 / num_batches
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
all_kl = sum(m.kl() for m in net.modules() if isinstance(m, BBBConv2d)).item()
print(f"KL in the loss {kl.item():.1f}, KL of all Bayesian layers {all_kl:.1f}")
for n, p in net.named_parameters():
    print(n, "grad", p.grad is not None, "changed", not torch.equal(before[n], p))
