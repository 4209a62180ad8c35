# Bayesian regression with a "lifted" nn.Module: the weights of the network are
# sampled from a variational guide (loc + softplus(scale) * eps) and then pushed
# into the module before it is called, like pyro.random_module / pyro.module
# did in 2017.  The helper wrote the sampled values into the module with an
# in-place copy into its state_dict, which is not differentiable: the guide's
# loc / scale never receive a gradient and never move.
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class RegressionModel(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.linear = nn.Linear(p, 1)

    def forward(self, x):
        return self.linear(x)


def module(nn_module, sampled):
    """Put the sampled parameter values into the network (pyro.module)."""
    current_nn_state = nn_module.state_dict()
    for name, value in sampled.items():
        mod_name, _, p_name = name.rpartition(".")
        nn_module.get_submodule(mod_name)._parameters[p_name] = value
    return nn_module


def random_module(nn_module, guide):
    """Sample every parameter from the guide and lift the module."""
    sampled = {}
    for name, (loc, scale) in guide.items():
        eps = torch.randn_like(loc)
        sampled[name] = loc + F.softplus(scale) * eps
    return module(nn_module, sampled)


p = 3
regression_model = RegressionModel(p)
guide = {
    "linear.weight": (nn.Parameter(torch.zeros(1, p)), nn.Parameter(torch.full((1, p), -3.0))),
    "linear.bias": (nn.Parameter(torch.zeros(1)), nn.Parameter(torch.full((1,), -3.0))),
}
guide_params = [t for pair in guide.values() for t in pair]
optim = torch.optim.Adam(guide_params, lr=0.05)

x = torch.randn(64, p)
y = x @ torch.tensor([[2.0], [-1.0], [0.5]]) + 0.3

loc_w = guide["linear.weight"][0]
before = loc_w.detach().clone()
for step in range(20):
    optim.zero_grad()
    lifted_nn = random_module(regression_model, guide)
    loss = F.mse_loss(lifted_nn(x), y)
    loss.backward()
    optim.step()

print("loss:", loss.item())
print("guide loc grad:", loc_w.grad)
print("guide loc changed:", not torch.equal(before, loc_w.detach()))
