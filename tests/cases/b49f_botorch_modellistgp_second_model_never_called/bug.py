# [Bug] Use of zip leads to silent incomplete evaluation of IndependentModelList
# https://github.com/cornellius-gp/gpytorch/issues/2211  (fixed by PR #2249, "Fix silently ignored
# arguments in IndependentModelList", which makes the zip length-safe so this now raises)
#
# What went wrong: IndependentModelList.__call__ (the base of BoTorch's ModelListGP) pairs models
# with inputs via zip(self.models, _get_tensor_args(*args)). Called with one input for two models,
# model(train_x) evaluates only the first model and returns a one-element list. The
# SumMarginalLogLikelihood again zips (mlls, outputs, targets), so only the first model's mll enters
# the loss. The second model's mean/kernel/likelihood hyper-parameters never take part in the loss:
# their .grad stays None and Adam skips them; training "succeeds" silently. The issue notes the
# library's own unit test fell into this.
# Fix: pass one input per model, e.g. model(*model.train_inputs) (PR #2249 makes the mismatch raise).
#
# gpytorch / botorch are modelled below with small torch code keeping their names (ExactGP,
# GaussianLikelihood, LikelihoodList, IndependentModelList / ModelListGP, SumMarginalLogLikelihood,
# ExactMarginalLogLikelihood, ConstantMean, ScaleKernel(RBFKernel)).
import math

import torch
from torch import nn


# ----------------------------------------------------------------- mini gpytorch
def _softplus(raw):
    return nn.functional.softplus(raw) + 1e-4


class MultivariateNormal:
    def __init__(self, mean, covariance_matrix):
        self.mean = mean
        self.covariance_matrix = covariance_matrix

    def log_prob(self, value):
        diff = (value - self.mean).unsqueeze(-1)
        L = torch.linalg.cholesky(self.covariance_matrix)
        alpha = torch.cholesky_solve(diff, L)
        n = diff.shape[-2]
        quad = (diff * alpha).sum()
        logdet = 2 * torch.log(torch.diagonal(L)).sum()
        return -0.5 * (quad + logdet + n * math.log(2 * math.pi))


class GaussianLikelihood(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_noise = nn.Parameter(torch.zeros(1))

    @property
    def noise(self):
        return _softplus(self.raw_noise)

    def forward(self, function_dist):
        n = function_dist.mean.shape[-1]
        cov = function_dist.covariance_matrix + self.noise * torch.eye(n)
        return MultivariateNormal(function_dist.mean, cov)


class LikelihoodList(nn.Module):
    def __init__(self, *likelihoods):
        super().__init__()
        self.likelihoods = nn.ModuleList(likelihoods)

    def __call__(self, *args):
        return [likelihood(*args_) for likelihood, args_ in zip(self.likelihoods, _get_tuple_args_(*args))]


class ConstantMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.constant = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return self.constant.expand(x.shape[0])


class RBFKernel(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.zeros(1, 1))

    def forward(self, x1, x2):
        ls = _softplus(self.raw_lengthscale)
        sq = ((x1 / ls).unsqueeze(-2) - (x2 / ls).unsqueeze(-3)).pow(2).sum(-1)
        return torch.exp(-0.5 * sq)


class ScaleKernel(nn.Module):
    def __init__(self, base_kernel):
        super().__init__()
        self.base_kernel = base_kernel
        self.raw_outputscale = nn.Parameter(torch.zeros(()))

    def forward(self, x1, x2):
        return _softplus(self.raw_outputscale) * self.base_kernel(x1, x2)


class ExactGP(nn.Module):
    def __init__(self, train_inputs, train_targets, likelihood):
        super().__init__()
        self.train_inputs = (train_inputs,)
        self.train_targets = train_targets
        self.likelihood = likelihood

    def __call__(self, *inputs):
        return self.forward(*inputs)  # train mode: prior at the training inputs


class ExactMarginalLogLikelihood(nn.Module):
    def __init__(self, likelihood, model):
        super().__init__()
        self.likelihood = likelihood
        self.model = model

    def forward(self, function_dist, target):
        output = self.likelihood(function_dist)
        return output.log_prob(target).div(target.shape[-1])


def _get_tensor_args(*args):
    for arg in args:
        if torch.is_tensor(arg):
            yield (arg,)
        else:
            yield arg


def _get_tuple_args_(*args):
    for arg in args:
        if isinstance(arg, tuple):
            yield arg
        else:
            yield (arg,)


class IndependentModelList(nn.Module):
    def __init__(self, *models):
        super().__init__()
        self.models = nn.ModuleList(models)
        self.likelihood = LikelihoodList(*[m.likelihood for m in models])

    def __call__(self, *args, **kwargs):
        # gpytorch before PR #2249: plain zip, silently stops at the shorter sequence
        return [model.__call__(*args_, **kwargs) for model, args_ in zip(self.models, _get_tensor_args(*args))]

    @property
    def train_inputs(self):
        return [model.train_inputs for model in self.models]

    @property
    def train_targets(self):
        return [model.train_targets for model in self.models]


class SumMarginalLogLikelihood(nn.Module):
    def __init__(self, likelihood, model, mll_cls=ExactMarginalLogLikelihood):
        super().__init__()
        self.model = model
        self.likelihood = likelihood
        self.mlls = nn.ModuleList([mll_cls(mdl.likelihood, mdl) for mdl in model.models])

    def forward(self, outputs, targets):
        sum_mll = sum(mll(output, target) for mll, output, target in zip(self.mlls, outputs, targets))
        return sum_mll.div_(len(self.mlls))


# ----------------------------------------------------------------- mini botorch
class ModelListGP(IndependentModelList):
    pass


class ExactGPModel(ExactGP):
    def __init__(self, train_x, train_y, likelihood):
        super().__init__(train_x, train_y, likelihood)
        self.mean_module = ConstantMean()
        self.covar_module = ScaleKernel(RBFKernel())

    def forward(self, x):
        mean_x = self.mean_module(x)
        covar_x = self.covar_module(x, x)
        return MultivariateNormal(mean_x, covar_x)


# ----------------------------------------------------------------- script
torch.manual_seed(0)
N_PTS = 20
train_x = torch.linspace(0, 1, N_PTS).unsqueeze(-1)
train_obj = torch.sin(train_x * (2 * math.pi)).squeeze(-1) + 0.1 * torch.randn(N_PTS)
train_con = torch.cos(train_x * (2 * math.pi)).squeeze(-1) + 0.1 * torch.randn(N_PTS)

model_obj = ExactGPModel(train_x, train_obj, GaussianLikelihood())
model_con = ExactGPModel(train_x, train_con, GaussianLikelihood())
model = ModelListGP(model_obj, model_con)
mll = SumMarginalLogLikelihood(model.likelihood, model)

optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
for i in range(30):
    optimizer.zero_grad()
    output = model(train_x)  # <- unused_parameter
    loss = -mll(output, model.train_targets)
    loss.backward()
    optimizer.step()

print("loss", loss.item(), "outputs evaluated:", len(output))
print("model_obj outputscale grad:", model.models[0].covar_module.raw_outputscale.grad)
grad_con = model.models[1].covar_module.raw_outputscale.grad
print("model_con outputscale grad:", grad_con)
print("model_con noise:", model.models[1].likelihood.noise.item())
