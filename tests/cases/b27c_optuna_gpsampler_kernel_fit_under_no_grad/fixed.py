"""optuna/optuna issue #5663 "GPSampler's suggestion fails when used inside torch.no_grad() context manager",
https://github.com/optuna/optuna/issues/5663 (fixed by pull request #5671): a user runs study.optimize inside
`with torch.no_grad():` (the objective only evaluates a model). GPSampler fits its Gaussian-process kernel
parameters in plain torch: loss_func builds the negative log marginal likelihood of the raw (log) lengthscales,
kernel scale and noise, calls loss.backward() and hands loss and gradient to an optimizer. Under the caller's
no_grad the loss has no graph, backward raises "element 0 of tensors does not require grad and does not have a
grad_fn", the sampler catches it and warns "The optimization of kernel_params failed ... The default initial kernel
params will be used instead", so the GP never learns its hyper-parameters. Fix (#5671): compute the loss inside
torch.enable_grad() in loss_func. Optuna's L-BFGS-B (scipy) is a plain gradient-descent loop here."""
import math
import warnings

import numpy as np
import torch

torch.manual_seed(0)
torch.set_num_threads(1)


def matern52(sqdist):
    sqrt5d = torch.sqrt(5 * sqdist + 1e-12)
    return torch.exp(-sqrt5d) * (1 / 3 * (sqrt5d + 1) * sqrt5d + 1)


def marginal_log_likelihood(X, Y, raw):
    inv_sq_ls, kernel_scale, noise_var = torch.exp(raw[:-2]), torch.exp(raw[-2]), torch.exp(raw[-1]) + 1e-6
    sqdist = ((X[:, None, :] - X[None, :, :]) ** 2 * inv_sq_ls).sum(-1)
    cov = kernel_scale * matern52(sqdist) + noise_var * torch.eye(len(X), dtype=torch.float64)
    L = torch.linalg.cholesky(cov)
    alpha = torch.cholesky_solve(Y[:, None], L)[:, 0]
    return -0.5 * Y @ alpha - torch.log(torch.diagonal(L)).sum() - 0.5 * len(X) * math.log(2 * math.pi)


def log_prior(raw):
    return -(raw ** 2).sum() * 0.1  # keeps log-params near 0


def fit_kernel_params(X, Y, initial_raw):
    def loss_func(raw_params):
        raw_params_tensor = torch.from_numpy(raw_params).requires_grad_(True)
        with torch.enable_grad():  # the fix of #5671: grads even when the caller runs under no_grad
            loss = -marginal_log_likelihood(X, Y, raw_params_tensor) - log_prior(raw_params_tensor)
        loss.backward()
        return loss.item(), raw_params_tensor.grad.detach().numpy()

    try:
        raw = initial_raw.copy()
        for _ in range(30):
            loss, grad = loss_func(raw)
            raw = raw - 0.05 * grad
        return raw
    except RuntimeError as e:
        warnings.warn(f"The optimization of kernel_params failed: {e}\n"
                      "The default initial kernel params will be used instead.")
        return initial_raw


def objective(params):  # stand-in for evaluating a trained model
    return float(((params - torch.tensor([0.3, 0.7], dtype=torch.float64)) ** 2).sum())


X_list, Y_list = [], []
initial_raw = np.zeros(4)
with torch.no_grad():  # the user's code: the whole study runs under no_grad
    for trial in range(8):
        if trial < 5:
            x = torch.rand(2, dtype=torch.float64)
        else:
            X, Y = torch.stack(X_list), torch.tensor(Y_list, dtype=torch.float64)
            raw = fit_kernel_params(X, (Y - Y.mean()) / Y.std(), initial_raw)
            print(f"trial {trial}: fitted log kernel params {np.round(raw, 3)}")
            x = torch.rand(2, dtype=torch.float64)
        X_list.append(x)
        Y_list.append(objective(x))
print("kernel params moved from the initial ones:", not np.allclose(raw, initial_raw))
