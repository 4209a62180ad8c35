"""torchdiffeq issue #154 "Differentiation within the ODEfunc with Adjoint method",
https://github.com/rtqichen/torchdiffeq/issues/154: the ODE function is the gradient field of a network
(dx/dt = d net(x) / dx, taken with torch.autograd.grad(..., create_graph=True) inside forward). With odeint it
trains; with odeint_adjoint it fails, because the adjoint solver integrates the forward pass under torch.no_grad(),
so `y = self.my_func(x)` builds no graph and autograd.grad raises "element 0 of tensors does not require grad".
The maintainer's fix: compute y and its gradient inside `with torch.enable_grad():`, on x.clone().requires_grad_(True).
A hand-written fixed-step adjoint (Euler forward under no_grad, discrete adjoint backward) stands in for torchdiffeq."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)


def odeint(func, y0, t):
    ys, y = [y0], y0
    for t0, t1 in zip(t[:-1], t[1:]):
        y = y + (t1 - t0) * func(t0, y)
        ys.append(y)
    return torch.stack(ys)


class OdeintAdjointMethod(torch.autograd.Function):
    @staticmethod
    def forward(ctx, func, y0, t, *adjoint_params):
        ctx.func, ctx.adjoint_params = func, adjoint_params
        with torch.no_grad():
            ys = odeint(func, y0, t)
        ctx.save_for_backward(t, ys)
        return ys

    @staticmethod
    def backward(ctx, grad_ys):
        t, ys = ctx.saved_tensors
        func, params = ctx.func, ctx.adjoint_params
        adj_y, adj_p = grad_ys[-1], [torch.zeros_like(p) for p in params]
        for i in range(len(t) - 1, 0, -1):
            dt = t[i] - t[i - 1]
            with torch.enable_grad():
                y = ys[i - 1].detach().requires_grad_(True)
                f = func(t[i - 1], y)
                vjp = torch.autograd.grad(f, (y,) + tuple(params), adj_y, allow_unused=True)
            adj_p = [a + dt * v if v is not None else a for a, v in zip(adj_p, vjp[1:])]
            adj_y = adj_y + dt * vjp[0] + grad_ys[i - 1]
        return (None, adj_y, None, *adj_p)


def odeint_adjoint(func, y0, t):
    return OdeintAdjointMethod.apply(func, y0, t, *tuple(func.parameters()))


class ODEFunc(nn.Module):
    def __init__(self):
        super(ODEFunc, self).__init__()
        self.net = nn.Sequential(nn.Linear(2, 50), nn.Tanh(), nn.Linear(50, 1))

    def my_func(self, x):
        y = self.net(x)
        return y

    def forward(self, t, x):
        with torch.enable_grad():
            x = x.clone().requires_grad_(True)
            y = self.my_func(x)
            dy = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)[0]
        return dy


# data: points flowing down the potential 0.5*|x|^2 (dx/dt = -x)
batch_t = torch.linspace(0., 1., 11)
true_x0 = torch.randn(16, 2)
true_x = torch.stack([true_x0 * torch.exp(-s) for s in batch_t])

func = ODEFunc()
optimizer = torch.optim.Adam(func.parameters(), lr=1e-2)
w0 = func.net[0].weight.detach().clone()

for itr in range(10):
    optimizer.zero_grad()
    pred_x = odeint_adjoint(func, true_x0, batch_t)
    loss = torch.mean((pred_x - true_x) ** 2)
    loss.backward()
    optimizer.step()

print("loss:", loss.item(), "net[0].weight changed:", not torch.equal(w0, func.net[0].weight))
