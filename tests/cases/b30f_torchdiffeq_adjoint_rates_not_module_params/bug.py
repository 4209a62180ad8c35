"""torchdiffeq PR #104 (fix for issue #94), https://github.com/rtqichen/torchdiffeq/pull/104: fitting the two rates of
the logistic ODE x' = a*x - b*x**2 through odeint_adjoint. The dynamics module keeps the rates as plain tensors
(`self.a = a  # This is not a param`), while the adjoint solver only hands func.parameters() to its autograd
Function and only returns gradients for those, so a and b are not in the graph at all: the solution has no grad_fn
and loss.backward() raises. The PR names the cause; the fix used here (the advice given in #246) registers the
rates in the module: nn.Parameter in OdeDynamics, optimizer over model.parameters(); the rates then learn.
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


# Define the time grid and the true parameters
t_end = 3.
dt = 0.05
timePoints = torch.arange(start=0, end=t_end, step=dt)
a_true, b_true, x0 = 0.4, 3., 1.4


def odefun(t, x):
    return a_true * x - b_true * x ** 2


sol_target = odeint(odefun, torch.tensor(x0), timePoints)


class OdeDynamics(nn.Module):
    def __init__(self, a, b):
        super(OdeDynamics, self).__init__()
        self.a = a  # This is not a param  # <- non_parameter_tensor
        self.b = b

    def forward(self, t, x):
        return self.a * x - self.b * x ** 2


class OdeLayer(nn.Module):
    def __init__(self, time_points, a, b):
        super(OdeLayer, self).__init__()
        self.time_points = time_points
        self.dynamics = OdeDynamics(a, b)

    def forward(self, x0):
        return odeint_adjoint(self.dynamics, x0, self.time_points)


a = torch.tensor(0.1, requires_grad=True)
b = torch.tensor(1.0, requires_grad=True)
model = OdeLayer(timePoints, a, b)
optimizer = torch.optim.Adam([a, b], lr=0.05)

for epoch in range(20):
    optimizer.zero_grad()
    sol = model(torch.tensor(x0))
    loss = ((sol - sol_target) ** 2).mean()
    loss.backward()
    optimizer.step()

print("learned a, b:", [p.item() for p in model.dynamics.parameters()], "loss:", loss.item())
