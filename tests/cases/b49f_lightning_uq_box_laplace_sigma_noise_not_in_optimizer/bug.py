# lightning-uq-box PR "Laplace improvements" (review thread on laplace_model.py, tune_prior_precision)
# https://github.com/lightning-uq-box/lightning-uq-box/pull/138
# (follows issue "laplace: hyper-parameter optimization: is `sigma_noise` optimized?",
#  https://github.com/lightning-uq-box/lightning-uq-box/issues/130)
#
# What went wrong: the empirical-Bayes tuning of the Laplace hyper-parameters builds the
# hyper-optimizer from a list `optim_params`, filled by
#     if model.prior_precision is not None: optim_params.append(log_prior)
#     elif model.sigma_noise is not None:   optim_params.append(log_sigma)
# la.prior_precision is a tensor property that is never None, so the `elif` branch never runs and
# log_sigma (the observation-noise hyper-parameter) is never given to torch.optim.Adam. It is used
# in the negative log marginal likelihood and gets a .grad every epoch, but nothing ever steps it:
# sigma_noise stays at its initial value exp(1) (reviewer elcorto: "This would only ever optimize
# one of the parameters").
# Fix (as applied in the PR): test the user's tune_sigma_noise flag with its own `if`, so log_sigma
# is appended to the optimizer's parameter list.
#
# laplace-torch (Laplace / FullLaplace with a GGN Hessian for regression) is modelled below in small
# torch code that keeps its names (fit, log_marginal_likelihood, prior_precision, sigma_noise, ...).
import math

import torch
from torch import nn
from torch.nn.utils import parameters_to_vector


# ----------------------------------------------------------------- mini laplace-torch
class FullLaplace:
    """laplace.baselaplace.FullLaplace, regression likelihood, GGN Hessian."""

    def __init__(self, model, likelihood, sigma_noise=1.0, prior_precision=1.0, prior_mean=0.0,
                 temperature=1.0):
        self.model = model
        self.likelihood = likelihood
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.n_params = sum(p.numel() for p in self.params)
        self.sigma_noise = sigma_noise
        self.prior_precision = prior_precision
        self.prior_mean = prior_mean
        self.temperature = temperature
        self.loss = 0.0
        self.n_data = 0
        self.n_outputs = None
        self.H = torch.zeros(self.n_params, self.n_params)

    @property
    def sigma_noise(self):
        return self._sigma_noise

    @sigma_noise.setter
    def sigma_noise(self, sigma_noise):
        if isinstance(sigma_noise, (int, float)):
            self._sigma_noise = torch.tensor([float(sigma_noise)])
        elif torch.is_tensor(sigma_noise):
            self._sigma_noise = sigma_noise.reshape(-1)
        else:
            raise ValueError("sigma_noise must be a scalar or a torch.Tensor")

    @property
    def prior_precision(self):
        return self._prior_precision

    @prior_precision.setter
    def prior_precision(self, prior_precision):
        if isinstance(prior_precision, (int, float)):
            self._prior_precision = torch.tensor([float(prior_precision)])
        elif torch.is_tensor(prior_precision):
            self._prior_precision = prior_precision.reshape(-1)
        else:
            raise ValueError("prior_precision must be a scalar or a torch.Tensor")

    @property
    def prior_precision_diag(self):
        return self.prior_precision * torch.ones(self.n_params)

    @property
    def _H_factor(self):
        return 1 / self.sigma_noise.square() / self.temperature

    def _curv_closure(self, X, y):
        """GGN for MSE: sum_i J_i^T J_i, and 0.5 * sum of squared errors."""
        f = self.model(X)
        loss = 0.5 * (f - y).pow(2).sum().detach()
        Js = []
        for i in range(f.shape[0]):
            for k in range(f.shape[1]):
                g = torch.autograd.grad(f[i, k], self.params, retain_graph=True)
                Js.append(torch.cat([gi.reshape(-1) for gi in g]))
        J = torch.stack(Js)
        return loss, J.T @ J

    def fit(self, train_loader):
        self.model.eval()
        self.mean = parameters_to_vector(self.params).detach()
        X, _ = train_loader[0]
        with torch.no_grad():
            self.n_outputs = self.model(X[:1]).shape[-1]
        for X, y in train_loader:
            loss_batch, H_batch = self._curv_closure(X, y)
            self.loss += loss_batch
            self.H += H_batch
            self.n_data += X.shape[0]

    @property
    def posterior_precision(self):
        return self._H_factor * self.H + torch.diag(self.prior_precision_diag)

    @property
    def log_det_ratio(self):
        return torch.logdet(self.posterior_precision) - self.prior_precision_diag.log().sum()

    @property
    def scatter(self):
        delta = self.mean - self.prior_mean
        return (delta * self.prior_precision_diag) @ delta

    @property
    def log_likelihood(self):
        factor = -self._H_factor
        c = self.n_data * self.n_outputs * torch.log(self.sigma_noise * math.sqrt(2 * math.pi))
        return factor * self.loss - c

    def log_marginal_likelihood(self, prior_precision=None, sigma_noise=None):
        # update prior precision / sigma_noise (useful when iterating on marglik)
        if prior_precision is not None:
            self.prior_precision = prior_precision
        if sigma_noise is not None:
            self.sigma_noise = sigma_noise
        return (self.log_likelihood - 0.5 * (self.log_det_ratio + self.scatter)).sum()


def Laplace(model, likelihood, subset_of_weights="all", hessian_structure="full", **kwargs):
    return FullLaplace(model, likelihood, **kwargs)


# ----------------------------------------------------------------- lightning_uq_box.uq_methods.laplace_model
def tune_prior_precision(model, tune_precision_lr, n_epochs_tune_precision, tune_sigma_noise=True):
    """Tune the prior precision (and sigma noise) via Empirical Bayes."""
    with torch.inference_mode(False):
        log_prior, log_sigma = (
            torch.ones(1, requires_grad=True),
            torch.ones(1, requires_grad=True),
        )
        optim_params = []
        if model.prior_precision is not None:
            optim_params.append(log_prior)
        elif model.sigma_noise is not None:  # <- optimizer
            optim_params.append(log_sigma)

        hyper_optimizer = torch.optim.Adam(optim_params, lr=tune_precision_lr)
        bar = range(n_epochs_tune_precision)
        for i in bar:
            hyper_optimizer.zero_grad()
            neg_marglik = -model.log_marginal_likelihood(log_prior.exp(), log_sigma.exp())
            neg_marglik.backward()
            hyper_optimizer.step()
    return neg_marglik.detach()


class LaplaceRegression(nn.Module):
    """Stand-in for the LightningModule wrapper: fit + tune before testing."""

    def __init__(self, laplace_model, tune_precision_lr=0.1, n_epochs_tune_precision=100,
                 tune_sigma_noise=True):
        super().__init__()
        self.laplace_model = laplace_model
        self.hparams = dict(tune_precision_lr=tune_precision_lr,
                            n_epochs_tune_precision=n_epochs_tune_precision,
                            tune_sigma_noise=tune_sigma_noise)
        self.laplace_fitted = False

    def on_test_start(self, train_loader):
        if not self.laplace_fitted:
            with torch.inference_mode(False):
                self.laplace_model.fit(train_loader)
                return tune_prior_precision(
                    self.laplace_model,
                    self.hparams["tune_precision_lr"],
                    self.hparams["n_epochs_tune_precision"],
                    self.hparams["tune_sigma_noise"],
                )


# ----------------------------------------------------------------- script
torch.manual_seed(711)
X_train = torch.rand(64, 1) * 8
y_train = torch.sin(X_train) + 0.3 * torch.randn_like(X_train)
train_loader = [(X_train[i:i + 32], y_train[i:i + 32]) for i in range(0, 64, 32)]

model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(100):
    for X, y in train_loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(X), y)
        loss.backward()
        optimizer.step()

la = Laplace(model, "regression", subset_of_weights="all", hessian_structure="full")
uq_model = LaplaceRegression(la, tune_precision_lr=0.1, n_epochs_tune_precision=100,
                             tune_sigma_noise=True)
neg_marglik = uq_model.on_test_start(train_loader)
print("neg marglik", neg_marglik.item())
print("prior_precision", la.prior_precision.item())
print("sigma_noise", la.sigma_noise.item(), "(data noise 0.3, initial exp(1)=2.718)")
