# Explanation-guided training: the forward pass is run with temporarily
# modified weights (an LRP gamma rule, w + gamma * w.clamp(min=0)) swapped into
# the layers by a context manager, and the loss is differentiated w.r.t. the
# model's own parameters.  The context manager (zennit's mod_params / ParamMod
# before PR #185) installs the modified values as a *new* torch.nn.Parameter
# built from param.data, so the forward runs on fresh leaves: the original
# parameters get no gradient and the optimizer never moves them.
from contextlib import contextmanager

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


@contextmanager
def mod_params(module, modifier, param_keys=None, require_params=True):
    """Temporarily modify parameter attributes (all by default) of a module."""
    try:
        stored_params = {}
        if param_keys is None:
            param_keys = [name for name, _ in module.named_parameters(recurse=False)]

        missing = [key for key in param_keys if not hasattr(module, key)]
        if require_params and missing:
            raise RuntimeError(f"Module {module} requires missing parameters: {missing}")

        for key in param_keys:
            if key not in missing:
                param = getattr(module, key)
                if param is not None:
                    stored_params[key] = param
                    setattr(module, key, torch.nn.Parameter(modifier(param.data, key)))  # <- new_parameter
        yield module
    finally:
        for key, value in stored_params.items():
            setattr(module, key, value)


def gamma_rule(param, name, gamma=0.25):
    return param + gamma * param.clamp(min=0)


model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

x = torch.randn(32, 8)
y = torch.randn(32, 4)

before = model[0].weight.detach().clone()
for step in range(5):
    optimizer.zero_grad()
    with mod_params(model[0], gamma_rule), mod_params(model[2], gamma_rule):
        out = model(x)
    loss = F.mse_loss(out, y)
    loss.backward()
    optimizer.step()

print("loss:", loss.item())
print("first layer weight grad:", model[0].weight.grad)
print("first layer weight changed:", not torch.equal(before, model[0].weight.detach()))
