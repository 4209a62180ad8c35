# "parameter identification error" -- tum-pbs/ConFIG issue #10
# https://github.com/tum-pbs/ConFIG/issues/10
# The reporter adapted the ConFIG Burgers PINN example to identify the viscosity nu: nu became an
# nn.Parameter inside BurgersNet and pde_loss used network.nu. ConFIG collects one gradient vector per
# loss term with get_gradient_vector(net), which skips parameters whose .grad is None (jump_none=True).
# nu is only used by the PDE residual, so after zero_grad() + boundary/initial backward nu.grad is None,
# the per-loss vectors have different lengths and ConFIG_update's torch.stack(grads) raises
# "stack expects each tensor to be equal size".
# Fix (the reporter's working version in the thread): keep nu out of the network -- it lives on
# BurgersLoss and is appended to the optimizer's params, so the per-loss gradient vectors only cover
# the network weights and nu is stepped with its own PDE-loss gradient.
# Plain-torch rewrite of conflictfree.utils.get_gradient_vector / apply_gradient_vector / ConFIG_update.
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)


def get_gradient_vector(network, jump_none=True):
    with torch.no_grad():
        grad_vec = None
        for par in network.parameters():
            if par.grad is None:
                if jump_none:
                    continue
            viewed = par.grad.data.view(-1)
            grad_vec = viewed if grad_vec is None else torch.cat((grad_vec, viewed))
        return grad_vec


def apply_gradient_vector(network, grad_vec, jump_none=True):
    with torch.no_grad():
        start = 0
        for par in network.parameters():
            if par.grad is None:
                if jump_none:
                    continue
            end = start + par.grad.data.view(-1).shape[0]
            par.grad.data = grad_vec[start:end].view(par.grad.data.shape)
            start = end


def ConFIG_update(grads):
    grads = torch.stack(grads)
    unit_grads = grads / grads.norm(dim=1, keepdim=True)
    best_direction = torch.linalg.pinv(unit_grads) @ torch.ones(grads.shape[0])
    best_direction = best_direction / best_direction.norm()
    length = (grads @ best_direction).sum()
    return best_direction * length


class BurgersNet(nn.Module):
    def __init__(self, channel_basics=16, n_layers=2, nu_init=0.01 / np.pi, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.ini_net = nn.Sequential(nn.Linear(2, channel_basics), nn.Tanh())
        self.net = nn.Sequential(*[nn.Sequential(nn.Linear(channel_basics, channel_basics), nn.Tanh())
                                   for _ in range(n_layers)])
        self.out_net = nn.Sequential(nn.Linear(channel_basics, 1))

    def forward(self, x, t):
        ini_shape = x.shape
        y = torch.stack([x, t], dim=-1)
        y = self.out_net(self.net(self.ini_net(y)))
        return y.view(ini_shape)


class BurgersLoss(nn.Module):
    def __init__(self, nu_init=0.01 / np.pi):
        super().__init__()
        self.nu = nn.Parameter(torch.tensor([nu_init], dtype=torch.float32))

    def _derivative(self, y, x, order=1):
        for _ in range(order):
            y = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True, retain_graph=True)[0]
        return y

    def pde_loss(self, network, inputs):
        x, t, _ = inputs
        u = network(x, t)
        u_t = self._derivative(u, t)
        u_x = self._derivative(u, x)
        u_xx = self._derivative(u_x, x)
        return (u_t + u * u_x - self.nu * u_xx).pow(2).mean()

    def boundary_loss(self, network, inputs):
        x_b, t_b, value_b = inputs
        return torch.mean((network(x_b, t_b) - value_b) ** 2)

    def initial_loss(self, network, inputs):
        x_i, t_i, value_i = inputs
        return torch.mean((network(x_i, t_i) - value_i) ** 2)


class BurgersDataset:
    def __init__(self, n_pde=64, n_initial=16, n_boundary=16):
        self.n_pde, self.n_initial, self.n_boundary = n_pde, n_initial, n_boundary

    def sample_initial(self):
        x = torch.rand(self.n_initial) * 2 - 1
        return (x, torch.zeros_like(x), -torch.sin(np.pi * x))

    def sample_boundary(self):
        x = torch.cat([-torch.ones(self.n_boundary // 2), torch.ones(self.n_boundary // 2)])
        t = torch.rand(self.n_boundary)
        return (x, t, torch.zeros_like(t))

    def sample_pde(self):
        x = (torch.rand(self.n_pde) * 2 - 1).requires_grad_(True)
        t = torch.rand(self.n_pde).requires_grad_(True)
        return (x, t, None)


net = BurgersNet()
loss = BurgersLoss()
dataset = BurgersDataset()
params = list(net.parameters())
params.append(loss.nu)
optimizer = torch.optim.Adam(params, lr=1e-3)

for epoch in range(3):
    grads = []
    for loss_fn, sampler in [(loss.initial_loss, dataset.sample_initial),
                             (loss.boundary_loss, dataset.sample_boundary),
                             (loss.pde_loss, dataset.sample_pde)]:
        optimizer.zero_grad()
        loss_i = loss_fn(net, sampler())
        loss_i.backward()
        grads.append(get_gradient_vector(net))
    apply_gradient_vector(net, ConFIG_update(grads))
    optimizer.step()
    print(f"epoch {epoch} current_nu={loss.nu.item():.6f}")
