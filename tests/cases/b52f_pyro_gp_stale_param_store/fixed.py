# "When I define a new GPRegression, the kernel parameter is automatically overwritten
#  by the kernel parameter of the previous GPRegression" -- pyro-ppl/pyro issue #3209
# https://github.com/pyro-ppl/pyro/issues/3209
#
# What went wrong: pyro.contrib.gp models are PyroModules whose PyroParams are also
# kept in Pyro's global param store under their full names ("kernel.lengthscale", ...).
# When a second GPRegression is trained in the same process, the first access to
# its kernel parameters inside model() finds those names already in the store and
# replaces the module's own parameters by the (stale) ones of the first GP.  The
# optimizer built by gp.util.train holds the second GP's original parameters, which
# no longer take part in the loss; the stale parameters that do get gradients are in
# no optimizer -- so the second GP reports the first GP's kernel and never updates it.
# Fix (maintainer fritzo): call pyro.clear_param_store() before each run (or run each
# model inside pyro.get_param_store().scope()).
#
# Plain-torch rewrite of the parts involved: ParamStoreDict, PyroModule/PyroParam
# (__getattr__ sync with the store), gp.kernels.RBF, gp.models.GPRegression and
# gp.util.train.  Random 1-D data, two runs.
import torch
import torch.nn as nn
from torch.distributions import MultivariateNormal, constraints, transform_to

torch.manual_seed(0)


# ---- pyro.params.param_store ----
class ParamStoreDict:
    def __init__(self):
        self._params = {}        # fullname -> unconstrained nn.Parameter

    def __contains__(self, name):
        return name in self._params

    def clear(self):
        self._params = {}


_PYRO_PARAM_STORE = ParamStoreDict()


def clear_param_store():
    _PYRO_PARAM_STORE.clear()


# ---- pyro.nn.module ----
class PyroParam:
    def __init__(self, init_value, constraint=constraints.real):
        self.init_value = init_value
        self.constraint = constraint


class PyroModule(nn.Module):
    def __init__(self):
        super().__init__()
        self._pyro_params = {}
        self._pyro_name = ""
        self._pyro_active = False

    def __setattr__(self, name, value):
        if isinstance(value, PyroParam):
            unconstrained = transform_to(value.constraint).inv(value.init_value)
            self.register_parameter(name + "_unconstrained", nn.Parameter(unconstrained))
            self._pyro_params[name] = value.constraint
            return
        if isinstance(value, PyroModule):
            value._pyro_name = name if not self._pyro_name else self._pyro_name + "." + name
        super().__setattr__(name, value)

    def _set_active(self, flag):
        for m in self.modules():
            if isinstance(m, PyroModule):
                object.__setattr__(m, "_pyro_active", flag)

    def __getattr__(self, name):
        # PyroParams trigger pyro.param statements.
        if "_pyro_params" in self.__dict__:
            _pyro_params = self.__dict__["_pyro_params"]
            if name in _pyro_params:
                constraint = _pyro_params[name]
                unconstrained_value = getattr(self, name + "_unconstrained")
                if self.__dict__["_pyro_active"]:
                    fullname = name if not self._pyro_name else self._pyro_name + "." + name
                    if fullname in _PYRO_PARAM_STORE:
                        if _PYRO_PARAM_STORE._params[fullname] is not unconstrained_value:
                            # Update PyroModule <--- ParamStore.
                            unconstrained_value = _PYRO_PARAM_STORE._params[fullname]
                            super().__setattr__(name + "_unconstrained", unconstrained_value)
                    else:
                        # Update PyroModule ---> ParamStore.
                        _PYRO_PARAM_STORE._params[fullname] = unconstrained_value
                return transform_to(constraint)(unconstrained_value)
        return super().__getattr__(name)


# ---- pyro.contrib.gp ----
class RBF(PyroModule):
    def __init__(self, input_dim, variance=None, lengthscale=None):
        super().__init__()
        self.input_dim = input_dim
        variance = torch.tensor(1.0) if variance is None else variance
        self.variance = PyroParam(variance, constraints.positive)
        lengthscale = torch.tensor(1.0) if lengthscale is None else lengthscale
        self.lengthscale = PyroParam(lengthscale, constraints.positive)

    def forward(self, X, Z=None):
        Z = X if Z is None else Z
        r2 = ((X[:, None, :] - Z[None, :, :]) / self.lengthscale).pow(2).sum(-1)
        return self.variance * torch.exp(-0.5 * r2)


class GPRegression(PyroModule):
    def __init__(self, X, y, kernel, noise=None):
        super().__init__()
        self.X = X
        self.y = y
        self.kernel = kernel
        noise = torch.tensor(1.0) if noise is None else noise
        self.noise = PyroParam(noise, constraints.positive)

    def model(self):
        self._set_active(True)
        try:
            N = self.X.size(0)
            Kff = self.kernel(self.X) + self.noise * torch.eye(N)
            return MultivariateNormal(torch.zeros(N), covariance_matrix=Kff).log_prob(self.y)
        finally:
            self._set_active(False)

    def guide(self):
        pass


def differentiable_loss(model, guide):
    return -model()


def train(gpmodule, optimizer=None, loss_fn=None, num_steps=1000):
    optimizer = (torch.optim.Adam(gpmodule.parameters(), lr=0.05)
                 if optimizer is None else optimizer)
    loss_fn = differentiable_loss if loss_fn is None else loss_fn

    def closure():
        optimizer.zero_grad()
        loss = loss_fn(gpmodule.model, gpmodule.guide)
        loss.backward()
        return loss

    losses = []
    for i in range(num_steps):
        loss = optimizer.step(closure)
        losses.append(loss.item())
    return losses


# ---- user script: fit one GP per data set ----
datasets = []
for scale in (0.3, 3.0):
    X = torch.linspace(-5, 5, 30).unsqueeze(-1)
    y = torch.sin(X.squeeze(-1) / scale) + 0.1 * torch.randn(30)
    datasets.append((X, y))

for run, (X, y) in enumerate(datasets):
    clear_param_store()
    kernel = RBF(input_dim=1)
    gpr = GPRegression(X, y, kernel, noise=torch.tensor(0.5))
    before = gpr.kernel.lengthscale.item()
    losses = train(gpr, num_steps=40)
    after = gpr.kernel.lengthscale.item()
    print(f"run {run}: lengthscale {before:.4f} -> {after:.4f}  loss {losses[0]:.3f} -> {losses[-1]:.3f}")
