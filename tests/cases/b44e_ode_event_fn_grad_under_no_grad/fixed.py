# Neural-ODE gradient flow with a terminal event (shape of torchdiffeq issue #179).
# The event solver evaluates event_fn under torch.no_grad() (as torchdiffeq does to save
# memory); the user's event function calls torch.autograd.grad on an energy, which then
# has no graph.
import torch
import torch.nn as nn
from torch.autograd import grad

torch.manual_seed(0)


class GradientFlow(nn.Module):
    """dx/dt = -dE/dx with E(x) = 0.5 * k * |x|^2, k a learned stiffness."""

    def __init__(self):
        super().__init__()
        self.log_k = nn.Parameter(torch.tensor(0.0))

    def energy(self, x):
        return 0.5 * self.log_k.exp() * (x ** 2).sum()

    def forward(self, t, x):
        return -self.log_k.exp() * x


func = GradientFlow()


def event_fn(t, x):
    # steady-state detection: stop when |dE/dx| drops under a tolerance
    with torch.enable_grad():
        f = func.energy(x)
        g = grad(f, x, create_graph=True, retain_graph=True)[0]
    return g.norm() - 0.5


def odeint_event(func, x0, t0, event_fn, dt=0.05, max_steps=200):
    """Plain-torch stand-in for torchdiffeq.odeint_event: explicit Euler steps with
    autograd on; the event function is evaluated without building a graph."""
    t, x = t0, x0
    with torch.no_grad():
        e_prev = event_fn(t, x)
    for _ in range(max_steps):
        x = x + dt * func(t, x)
        t = t + dt
        with torch.no_grad():
            e = event_fn(t, x)
        if torch.sign(e) != torch.sign(e_prev):
            break
        e_prev = e
    return t, x


opt = torch.optim.Adam(func.parameters(), lr=0.05)
x0 = torch.tensor([-0.0881, 0.4923], requires_grad=True)
target = torch.tensor([-0.03, 0.15])

for step in range(3):
    opt.zero_grad()
    t_event, x_event = odeint_event(func, x0, torch.tensor(0.0), event_fn=event_fn)
    loss = ((x_event - target) ** 2).sum()
    loss.backward()
    print("step", step, "loss", loss.item(), "log_k.grad", func.log_k.grad)
    opt.step()
