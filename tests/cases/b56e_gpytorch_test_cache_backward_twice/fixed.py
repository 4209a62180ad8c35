# Report: "Detach mean and covar caches at test time" (fixes #175)
# https://github.com/cornellius-gp/gpytorch/pull/228
# What went wrong: in eval mode ExactGP caches K_train^-1 (y - mu) (mean_cache) the first
# time it predicts and reuses it on later calls.  The cache is built from the kernel /
# likelihood hyperparameters, so it carries their graph.  Optimizing an acquisition
# function over the test input x (BayesOpt) therefore backpropagates into the cache's graph
# on every step; the first backward frees it and the second one raises
# "Trying to backward through the graph a second time".
# Fix (merged): detach the prediction caches when they are computed at test time.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ConstantMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.constant = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return self.constant.expand(x.size(0))


class RBFKernel(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.zeros(1))

    @property
    def lengthscale(self):
        return F.softplus(self.raw_lengthscale)

    def forward(self, x1, x2):
        diff = (x1.unsqueeze(-2) - x2.unsqueeze(-3)) / self.lengthscale
        return torch.exp(-0.5 * diff.pow(2).sum(-1))


class GaussianLikelihood(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_noise = nn.Parameter(torch.tensor([-2.0]))

    @property
    def noise(self):
        return F.softplus(self.raw_noise) + 1e-4


def exact_predictive_mean(full_covar, full_mean, train_labels, num_train, likelihood, precomputed_cache=None):
    if precomputed_cache is None:
        train_train_covar = full_covar[:num_train, :num_train] + likelihood.noise * torch.eye(num_train)
        train_labels_offset = (train_labels - full_mean[:num_train]).unsqueeze(-1)
        precomputed_cache = torch.linalg.solve(train_train_covar, train_labels_offset).squeeze(-1).detach()
    test_train_covar = full_covar[num_train:, :num_train]
    res = test_train_covar @ precomputed_cache + full_mean[num_train:]
    return res, precomputed_cache


def exact_predictive_var(full_covar, num_train, likelihood):
    train_train_covar = full_covar[:num_train, :num_train] + likelihood.noise * torch.eye(num_train)
    test_train_covar = full_covar[num_train:, :num_train]
    test_test_covar = full_covar[num_train:, num_train:]
    solve = torch.linalg.solve(train_train_covar, test_train_covar.transpose(-1, -2))
    return (test_test_covar - test_train_covar @ solve).diagonal().clamp_min(1e-9)


class ExactGP(nn.Module):
    def __init__(self, train_inputs, train_targets, likelihood):
        super().__init__()
        self.train_inputs = train_inputs
        self.train_targets = train_targets
        self.likelihood = likelihood
        self.mean_cache = None

    def train(self, mode=True):
        if mode:
            self.mean_cache = None
        return super().train(mode)

    def __call__(self, x):
        if self.training:
            return self.forward(x)
        full_inputs = torch.cat([self.train_inputs, x], dim=-2)
        full_mean, full_covar = self.forward(full_inputs)
        num_train = self.train_targets.size(-1)
        predictive_mean, mean_cache = exact_predictive_mean(
            full_covar=full_covar,
            full_mean=full_mean,
            train_labels=self.train_targets,
            num_train=num_train,
            likelihood=self.likelihood,
            precomputed_cache=self.mean_cache,
        )
        predictive_var = exact_predictive_var(full_covar, num_train, self.likelihood)
        self.mean_cache = mean_cache
        return predictive_mean, predictive_var


class ExactGPModel(ExactGP):
    def __init__(self, train_x, train_y, likelihood):
        super().__init__(train_x, train_y, likelihood)
        self.mean_module = ConstantMean()
        self.covar_module = RBFKernel()

    def forward(self, x):
        return self.mean_module(x), self.covar_module(x, x)


def batch_expected_improvement(x, model, best_y):
    mean, var = model(x)
    std = var.sqrt()
    z = (mean - best_y) / std
    normal = torch.distributions.Normal(0.0, 1.0)
    ei = std * (z * normal.cdf(z) + normal.log_prob(z).exp())
    return ei.sum()


train_x = torch.rand(12, 1)
train_y = torch.sin(6.0 * train_x).squeeze(-1) + 0.05 * torch.randn(12)
likelihood = GaussianLikelihood()
model = ExactGPModel(train_x, train_y, likelihood)
model.eval()

x = torch.tensor([[0.25]], requires_grad=True)
optimizer = torch.optim.Adam([x], lr=0.1)
for i in range(50):
    optimizer.zero_grad()
    loss = -batch_expected_improvement(x, model, train_y.max())
    loss.backward()
    optimizer.step()
    if i % 10 == 0:
        print("Iter {}, loss = {:.4f}, x = {:.4f}".format(i, loss.item(), x.item()))
print("final x:", x.item(), "x.grad:", x.grad)
