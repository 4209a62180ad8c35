"""functorch issue #280, "How to update the original model parameters after calling make_functional?"
https://github.com/pytorch/functorch/issues/280

What the user saw: they write plain gradient descent on the `params` returned by make_functional
(jacobian of the loss, then param.add_(-lr * grad) under no_grad); the loss of `model` itself never
changes: "updating the tensors pointed by the params returned by make_functional does not update the
real parameters in the original model".
Why: functorch.make_functional works on a deep copy of the module and returns the copy's parameters.
The model's own weights never enter the differentiated loss and never get a gradient or an update.
(make_functional is emulated here as functorch 0.x defines it: deepcopy + stateless call.)
Fix: evaluate the model with its own parameters, torch.func.functional_call(model, dict(model.named_parameters()), x).
"""
import copy
import torch
from torch import nn

torch.manual_seed(0)
learning_rate = 0.1


def make_functional(model):
    stateless_model = copy.deepcopy(model)
    names = [n for n, _ in stateless_model.named_parameters()]
    params = tuple(p for _, p in stateless_model.named_parameters())
    return (lambda ps, *args: torch.func.functional_call(stateless_model, dict(zip(names, ps)), args)), params


def optstep(params, jacobians):
    with torch.no_grad():
        for i, param in enumerate(params):
            param.add_(jacobians[i], alpha=-learning_rate)


model = nn.Linear(3, 5)
x, targets = torch.randn(2, 3), torch.randn(2, 5)
criterion = nn.MSELoss()
print("INITIAL LOSS:", criterion(model(x), targets).item())
func_model, params = make_functional(model)  # <- unused_parameter


def f(*params):
    out = func_model(params, x)
    return criterion(out, targets)


for it in range(3):
    jacobian = torch.autograd.functional.jacobian(f, params)
    optstep(params, jacobian)
print("LOSS OF model AFTER 3 STEPS:", criterion(model(x), targets).item())
print("model.weight.grad:", model.weight.grad)
