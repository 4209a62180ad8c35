"""UCB, uncertainty-guided continual learning with Bayesian layers (SaynaEbrahimi/UCB#5): `elbo_loss` collects the
per-sample log variational posterior and log prior of the Bayesian layers in Python lists and averages them with
`torch.as_tensor(lvps).mean()`, which rebuilds the values as constants: the complexity term (log_var - log_p)
carries no gradient, and only the NLL trains mu and rho (the comment on the issue names torch.as_tensor as the
cause). The fix stacks the list: `torch.stack(lvps).mean()` (the same for the prior)."""
import math
import torch
import torch.nn.functional as F
from torch import nn


class BayesianLinear(nn.Module):
    def __init__(self, n_in, n_out, rho=-3.0):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.empty(n_out, n_in).normal_(0., 0.1))
        self.weight_rho = nn.Parameter(rho + torch.empty(n_out, n_in).normal_(0., 0.1))

    def forward(self, x):
        sigma = torch.log1p(torch.exp(self.weight_rho))
        weight = self.weight_mu + sigma * torch.randn_like(sigma)
        log_prior = torch.distributions.Normal(0., 0.1).log_prob(weight).sum()
        log_variational_posterior = (-math.log(math.sqrt(2 * math.pi)) - torch.log(sigma)
                                     - (weight - self.weight_mu) ** 2 / (2 * sigma ** 2)).sum()
        return F.linear(x, weight), log_prior, log_variational_posterior


class BayesianMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = BayesianLinear(10, 16), BayesianLinear(16, 3)

    def forward(self, x):
        h, lp1, lv1 = self.fc1(x)
        out, lp2, lv2 = self.fc2(F.relu(h))
        return out, lp1 + lp2, lv1 + lv2


def elbo_loss(model, x, y, samples=2, num_batches=1):
    lps, lvps, predictions = [], [], []
    for _ in range(samples):
        out, lp, lv = model(x)
        predictions.append(F.log_softmax(out, -1))
        lps.append(lp)
        lvps.append(lv)
    log_var = 1e-3 * torch.as_tensor(lvps).mean()  # <- cut_term
    log_p = 1e-3 * torch.as_tensor(lps).mean()
    nll = 5e-2 * F.nll_loss(torch.stack(predictions).mean(0), y, reduction='sum')
    print(f"  complexity term requires grad: {(log_var - log_p).requires_grad}")
    return (log_var - log_p) / num_batches + nll


torch.manual_seed(0)
model = BayesianMLP()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 10), torch.randint(0, 3, (32,))
for step in range(2):
    loss = elbo_loss(model, x, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
