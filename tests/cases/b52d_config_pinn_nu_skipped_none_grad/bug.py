# Problems with adding jump_none=True to get_gradient_vector() and apply_gradient_vector()  (tum-pbs/ConFIG)
# https://github.com/tum-pbs/ConFIG/issues/4   (same crash for the Burgers nu-identification PINN: issue #10)
# What went wrong: ConFIG trains a PINN by taking one gradient vector per loss term
#   (backward -> get_gradient_vector). For a PDE-identification run the learnable viscosity `nu` is
#   only used by the physics residual, so after backward() of the boundary / initial losses nu.grad is
#   None. get_gradient_vector skipped None gradients, so the per-loss vectors had different lengths
#   and ConFIG_update's torch.stack(grads) raised RuntimeError.
# Fix (maintainer): fill missing gradients with zeros instead of skipping them:
#   get_gradient_vector(..., none_grad_mode="zero") / apply_gradient_vector(..., none_grad_mode="zero").
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


# ---------------- conflictfree.utils (plain-torch copy) ----------------
def get_gradient_vector(network, none_grad_mode="raise"):
    with torch.no_grad():
        grad_vec = None
        for par in network.parameters():
            if par.grad is None:
                if none_grad_mode == "raise":
                    raise RuntimeError("None gradient detected.")
                elif none_grad_mode == "zero":
                    viewed = torch.zeros_like(par.data.view(-1))
                else:  # "skip"
                    continue
            else:
                viewed = par.grad.data.view(-1)
            grad_vec = viewed if grad_vec is None else torch.cat((grad_vec, viewed))
        return grad_vec


def apply_gradient_vector(network, grad_vec, none_grad_mode="raise"):
    with torch.no_grad():
        start = 0
        for par in network.parameters():
            if par.grad is None and none_grad_mode == "skip":
                continue
            end = start + par.data.view(-1).shape[0]
            par.grad = grad_vec[start:end].view(par.data.shape).clone()
            start = end


def unit_vector(vector):
    with torch.no_grad():
        if vector.norm() == 0:
            return torch.zeros_like(vector)
        return vector / vector.norm()


# ---------------- conflictfree.grad_operator (plain-torch copy) ----------------
def ConFIG_update(grads, use_least_square=True):
    if not isinstance(grads, torch.Tensor):
        grads = torch.stack(grads)
    with torch.no_grad():
        weights = torch.ones(grads.shape[0], dtype=grads.dtype)
        units = torch.nan_to_num(grads / grads.norm(dim=1).unsqueeze(1), 0)
        best_direction = torch.linalg.lstsq(units, weights.unsqueeze(1)).solution.squeeze(1)
        direction = unit_vector(best_direction)
        length = torch.sum(grads @ direction)  # ProjectionLength
        return length * direction


# ---------------- Burgers PINN with a learnable viscosity ----------------
class BurgersNet(nn.Module):
    def __init__(self, channel_basics=20, n_layers=3, nu_init=0.05, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        layers = [nn.Linear(2, channel_basics), nn.Tanh()]
        for _ in range(n_layers - 1):
            layers += [nn.Linear(channel_basics, channel_basics), nn.Tanh()]
        layers += [nn.Linear(channel_basics, 1)]
        self.net = nn.Sequential(*layers)
        self.nu = nn.Parameter(torch.tensor([nu_init], dtype=torch.float32))

    def forward(self, x, t):
        return self.net(torch.cat([x, t], dim=1))


def derivative(y, x):
    return torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)[0]


def loss_pde(network, inputs):
    x, t = inputs
    u = network(x, t)
    u_t = derivative(u, t)
    u_x = derivative(u, x)
    u_xx = derivative(u_x, x)
    return (u_t + u * u_x - network.nu * u_xx).pow(2).mean()


def loss_boundary(network, inputs):
    x, t = inputs
    return network(x, t).pow(2).mean()


def loss_initial(network, inputs):
    x, t = inputs
    return (network(x, t) + torch.sin(np.pi * x)).pow(2).mean()


def sample():
    x = (torch.rand(64, 1) * 2 - 1).requires_grad_(True)
    t = torch.rand(64, 1).requires_grad_(True)
    tb = torch.rand(32, 1)
    xb = torch.where(torch.rand(32, 1) > 0.5, 1.0, -1.0)
    xi = torch.rand(32, 1) * 2 - 1
    return (x, t), (xb, tb), (xi, torch.zeros_like(xi))


net = BurgersNet()
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
loss_fns = [loss_pde, loss_boundary, loss_initial]
for it in range(5):
    inputs = sample()
    grads = []
    for loss_fn, inp in zip(loss_fns, inputs):
        optimizer.zero_grad()
        loss_i = loss_fn(net, inp)
        loss_i.backward()
        grads.append(get_gradient_vector(net, none_grad_mode="skip"))  # <- unused_parameter
    apply_gradient_vector(net, ConFIG_update(grads), none_grad_mode="skip")
    optimizer.step()
    print(f"iter {it}: nu = {net.nu.item():.5f}")
