# [Bug] Fitting gpytorch model fails when the training data has requires_grad=True
# https://github.com/meta-pytorch/botorch/issues/2253
# (maintainer advice for the same error: https://github.com/meta-pytorch/botorch/issues/2370 ,
#  "gradient enabled observations sneak into train_Y. If you detach the gradients before adding
#  new points to the training data, the error should go away.")
#
# What went wrong: the reporter's objective values train_obj were computed from train_x, a tensor
# with requires_grad=True, so train_obj carries a graph (grad_fn=AddBackward0). SingleTaskGP stores
# it as model.train_targets. fit_gpytorch_mll runs an optimizer loop whose closure calls
# loss.backward() every iteration; the marginal log likelihood uses the targets, so the first
# backward also walks (and frees) the graph that produced train_obj. The second iteration's backward
# reaches the freed PowBackward node: "RuntimeError: Trying to backward through the graph a second
# time".
# Fix: give the GP plain observations, i.e. detach the targets before building the model.
#
# gpytorch / botorch are modelled below with small torch code that keeps their class and function
# names (SingleTaskGP, GaussianLikelihood, ScaleKernel(RBFKernel), ExactMarginalLogLikelihood,
# fit_gpytorch_mll with a torch-optimizer closure).
import math

import torch
from torch import nn


# ----------------------------------------------------------------- mini gpytorch
class Positive:
    def transform(self, raw):
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
        quad = (diff * alpha).sum(dim=(-1, -2))
        logdet = 2 * torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1)
        return -0.5 * (quad + logdet + n * math.log(2 * math.pi))


class GaussianLikelihood(nn.Module):
    def __init__(self, batch_shape=torch.Size()):
        super().__init__()
        self.raw_noise = nn.Parameter(torch.zeros(*batch_shape, 1))
        self.raw_noise_constraint = Positive()

    @property
    def noise(self):
        return self.raw_noise_constraint.transform(self.raw_noise)

    def forward(self, function_dist):
        n = function_dist.mean.shape[-1]
        eye = torch.eye(n, dtype=function_dist.mean.dtype)
        cov = function_dist.covariance_matrix + self.noise.unsqueeze(-1) * eye
        return MultivariateNormal(function_dist.mean, cov)


class ConstantMean(nn.Module):
    def __init__(self, batch_shape=torch.Size()):
        super().__init__()
        self.constant = nn.Parameter(torch.zeros(*batch_shape, 1))

    def forward(self, x):
        return self.constant.expand(*self.constant.shape[:-1], x.shape[-2])


class RBFKernel(nn.Module):
    def __init__(self, ard_num_dims, batch_shape=torch.Size()):
        super().__init__()
        self.raw_lengthscale = nn.Parameter(torch.zeros(*batch_shape, 1, ard_num_dims))
        self.raw_lengthscale_constraint = Positive()

    @property
    def lengthscale(self):
        return self.raw_lengthscale_constraint.transform(self.raw_lengthscale)

    def forward(self, x1, x2):
        x1_ = x1 / self.lengthscale
        x2_ = x2 / self.lengthscale
        sq = (x1_.unsqueeze(-2) - x2_.unsqueeze(-3)).pow(2).sum(-1)
        return torch.exp(-0.5 * sq)


class ScaleKernel(nn.Module):
    def __init__(self, base_kernel, batch_shape=torch.Size()):
        super().__init__()
        self.base_kernel = base_kernel
        self.raw_outputscale = nn.Parameter(torch.zeros(*batch_shape))
        self.raw_outputscale_constraint = Positive()

    @property
    def outputscale(self):
        return self.raw_outputscale_constraint.transform(self.raw_outputscale)

    def forward(self, x1, x2):
        return self.outputscale[..., None, None] * self.base_kernel(x1, x2)


class ExactGP(nn.Module):
    def __init__(self, train_inputs, train_targets, likelihood):
        super().__init__()
        self.train_inputs = (train_inputs,)
        self.train_targets = train_targets
        self.likelihood = likelihood

    def __call__(self, *inputs):
        # train mode: the prior at the training inputs
        return self.forward(*inputs)


class ExactMarginalLogLikelihood(nn.Module):
    def __init__(self, likelihood, model):
        super().__init__()
        self.likelihood = likelihood
        self.model = model

    def forward(self, function_dist, target):
        output = self.likelihood(function_dist)
        res = output.log_prob(target)
        num_data = target.shape[-1]
        return res.div_(num_data)


# ----------------------------------------------------------------- mini botorch
class SingleTaskGP(ExactGP):
    def __init__(self, train_X, train_Y):
        self._num_outputs = train_Y.shape[-1]
        batch_shape = torch.Size([self._num_outputs]) if self._num_outputs > 1 else torch.Size()
        # botorch: multi-output data becomes a batched model; train_Y (n x m) -> targets (m x n)
        train_targets = train_Y.transpose(-1, -2) if self._num_outputs > 1 else train_Y.squeeze(-1)
        likelihood = GaussianLikelihood(batch_shape=batch_shape)
        super().__init__(train_X, train_targets, likelihood)
        self.mean_module = ConstantMean(batch_shape=batch_shape)
        self.covar_module = ScaleKernel(
            RBFKernel(ard_num_dims=train_X.shape[-1], batch_shape=batch_shape),
            batch_shape=batch_shape,
        )

    def forward(self, x):
        mean_x = self.mean_module(x)
        covar_x = self.covar_module(x, x)
        return MultivariateNormal(mean_x, covar_x)


def get_loss_closure_with_grads(mll, parameters):
    model = mll.model

    def closure():
        for p in parameters:
            p.grad = None
        output = model(*model.train_inputs)
        loss = -mll(output, model.train_targets).sum()
        loss.backward()
        return loss

    return closure


def fit_gpytorch_mll(mll, step_limit=30, lr=0.1):
    """Stand-in for botorch.fit.fit_gpytorch_mll -> fit_gpytorch_mll_torch."""
    mll.train()
    parameters = [p for p in mll.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(parameters, lr=lr)
    closure = get_loss_closure_with_grads(mll, parameters)
    for step in range(step_limit):
        loss = closure()
        if step == 0:
            print("initial loss", loss.item())
        optimizer.step()
    mll.eval()
    return mll, loss


# ----------------------------------------------------------------- the report's script
torch.manual_seed(0)

train_x = torch.randn(30, 6, requires_grad=True)

train_obj = 3 * train_x + train_x**2  # <- autograd_error
print(train_obj.grad_fn)

model_obj = SingleTaskGP(train_x, train_obj)
mll = ExactMarginalLogLikelihood(model_obj.likelihood, model_obj)

mll, loss = fit_gpytorch_mll(mll)
print("final loss", loss.item())
print("lengthscale grad", model_obj.covar_module.base_kernel.raw_lengthscale.grad.norm().item())
