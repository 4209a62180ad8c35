"""BLiTZ (piEsposito/blitz-bayesian-deep-learning) issue #39 "Initializing net parameters",
https://github.com/piEsposito/blitz-bayesian-deep-learning/issues/39: to start a Bayes-by-Backprop regression
from the deterministic fit (slope -0.5, intercept 1), the user replaced the layer's posterior means with new
Parameters, `unfrozen_net.bl1.weight_mu = torch.nn.Parameter(...)` (and bias_mu). This only worked for a frozen
layer: an unfrozen BayesianLinear samples its weights from `weight_sampler` / `bias_sampler`, GaussianVariational
modules built in __init__ that still hold the old mu Parameters. The new weight_mu and bias_mu are registered on the
layer and given to the optimizer, but forward never reads them: they get grad None and never change, while the old
means (from the random init, not from the user's values) are the ones trained.
Fix (as in the thread): rebuild the samplers around the new Parameters right after assigning them, e.g.
`unfrozen_net.bl1.weight_sampler = GaussianVariational(unfrozen_net.bl1.weight_mu, unfrozen_net.bl1.weight_rho)`.
blitz.modules (BayesianLinear, GaussianVariational, the prior) and the @variational_estimator sample_elbo are a
few lines of stand-in; the line to change is the user's."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --- blitz.modules stand-in ------------------------------------------------------------------
class GaussianVariational(nn.Module):
    def __init__(self, mu, rho):
        super().__init__()
        self.mu = mu
        self.rho = rho
        self.w = None
        self.sigma = None

    def sample(self):
        eps = torch.randn_like(self.mu)
        self.sigma = torch.log1p(torch.exp(self.rho))
        self.w = self.mu + self.sigma * eps
        return self.w

    def log_posterior(self):
        log_sqrt2pi = math.log(math.sqrt(2 * math.pi))
        lp = -log_sqrt2pi - torch.log(self.sigma) - ((self.w - self.mu) ** 2) / (2 * self.sigma ** 2)
        return lp.mean()


class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features, bias=True, prior_sigma=1.0, freeze=False):
        super().__init__()
        self.bias = bias
        self.freeze = freeze
        self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).normal_(0, 0.1))
        self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).normal_(-6.0, 0.1))
        self.weight_sampler = GaussianVariational(self.weight_mu, self.weight_rho)
        self.bias_mu = nn.Parameter(torch.Tensor(out_features).normal_(0, 0.1))
        self.bias_rho = nn.Parameter(torch.Tensor(out_features).normal_(-6.0, 0.1))
        self.bias_sampler = GaussianVariational(self.bias_mu, self.bias_rho)
        self.prior = torch.distributions.Normal(0.0, prior_sigma)
        self.log_prior = 0
        self.log_variational_posterior = 0

    def forward(self, x):
        if self.freeze:
            return F.linear(x, self.weight_mu, self.bias_mu)
        w = self.weight_sampler.sample()
        b = self.bias_sampler.sample()
        self.log_variational_posterior = self.weight_sampler.log_posterior() + self.bias_sampler.log_posterior()
        self.log_prior = self.prior.log_prob(w).mean() + self.prior.log_prob(b).mean()
        return F.linear(x, w, b)


def sample_elbo(model, inputs, labels, criterion, sample_nbr, complexity_cost_weight=1.0):
    loss = 0
    for _ in range(sample_nbr):
        outputs = model(inputs)
        loss = loss + criterion(outputs, labels)
        kl = sum(m.log_variational_posterior - m.log_prior for m in model.modules() if isinstance(m, BayesianLinear))
        loss = loss + kl * complexity_cost_weight
    return loss / sample_nbr


# --- the user's script -----------------------------------------------------------------------
class bayesian_Net(nn.Module):
    def __init__(self, freeze):
        super(bayesian_Net, self).__init__()
        self.bl1 = BayesianLinear(1, 1, bias=True, freeze=freeze)

    def forward(self, x):
        x = self.bl1(x)
        return x


torch.manual_seed(0)
torch.set_num_threads(1)
unfrozen_net = bayesian_Net(freeze=False)

slope = -0.5
intercept = 1

unfrozen_net.bl1.weight_mu = torch.nn.Parameter(torch.Tensor([[slope]]), requires_grad=True)  # <- unused_parameter
unfrozen_net.bl1.bias_mu = torch.nn.Parameter(torch.Tensor([intercept]), requires_grad=True)

x = torch.linspace(-2, 2, 64).unsqueeze(1)
y = slope * x + intercept + 0.05 * torch.randn(64, 1)
optimizer = torch.optim.Adam(unfrozen_net.parameters(), lr=0.01)
criterion = nn.MSELoss()
mu_before = unfrozen_net.bl1.weight_mu.detach().clone()
for step in range(20):
    optimizer.zero_grad()
    loss = sample_elbo(unfrozen_net, x, y, criterion, sample_nbr=3, complexity_cost_weight=1e-3)
    loss.backward()
    optimizer.step()

print("weight_mu.grad is None:", unfrozen_net.bl1.weight_mu.grad is None)
print("weight_mu changed:", not torch.equal(mu_before, unfrozen_net.bl1.weight_mu.detach()))
print("mean used by the sampler:", unfrozen_net.bl1.weight_sampler.mu.item(), "(user set", slope, ")")
