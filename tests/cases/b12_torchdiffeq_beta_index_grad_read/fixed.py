"""torchdiffeq's odeint with a tuple state (rtqichen/torchdiffeq#147, "Leaf node being replaced?"): the dynamics use
`beta[0]` and `beta[1]` of a leaf `beta = torch.tensor([3., 5.], requires_grad=True)`, and after backward the user
prints `beta[0].grad`, expecting 50, and gets None with "The .grad attribute of a Tensor that is not a leaf Tensor is
being accessed": `beta[0]` is a new non-leaf view made by the indexing, the gradient sits in `beta.grad[0]`. (The
solver below is a fixed-step RK4 in torchdiffeq's calling convention; the script backpropagates both trajectories'
end points, so that x0 gets the 1 and beta[0] the 50 the report expects.)"""
import torch


def odeint(func, y0, t, steps=20):
    ys, y = [y0], y0
    for t0, t1 in zip(t[:-1], t[1:]):
        h = (t1 - t0) / steps
        for i in range(steps):
            s = t0 + i * h
            k1 = func(s, y)
            k2 = func(s + h / 2, tuple(a + h / 2 * k for a, k in zip(y, k1)))
            k3 = func(s + h / 2, tuple(a + h / 2 * k for a, k in zip(y, k2)))
            k4 = func(s + h, tuple(a + h * k for a, k in zip(y, k3)))
            y = tuple(a + h / 6 * (p + 2 * q + 2 * r + w) for a, p, q, r, w in zip(y, k1, k2, k3, k4))
        ys.append(y)
    return tuple(torch.stack([y[i] for y in ys]) for i in range(len(y0)))


def func(t, state):
    dx_dt = beta[0] * t
    dy_dt = beta[1] * t
    return dx_dt, dy_dt


torch.manual_seed(0)
beta = torch.tensor([3., 5.], requires_grad=True)
x0 = torch.tensor([0.1], requires_grad=True)
y0 = torch.tensor([2.], requires_grad=True)

D = odeint(func, (x0, y0), t=torch.tensor([0., 10.]))
print(D[0][-1].item(), D[1][-1].item())
(D[0][-1] + D[1][-1]).sum().backward()
print(x0.grad, y0.grad)
print(beta.grad[0])
