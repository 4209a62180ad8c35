"""torchdiffeq, a latent ODE after an LSTM encoder (rtqichen/torchdiffeq#178): the model declares
`self.SC = nn.Parameter(torch.randn(10, 10))` and hands it to the solver as
`adjoint_params`, but the ODE function never uses it: the dynamics multiply by the ODE function's own weight.
Listing a tensor as an adjoint parameter does not put it in the graph, so SC gets no gradient (zeros with the
adjoint solver) and never learns. The fix uses SC inside the dynamics (here it scales the weight; a fixed-step RK4 stands in for
torchdiffeq's odeint here.)"""
import torch
import torch.nn.functional as F
from torch import nn


def odeint(func, y0, t, adjoint_params=()):
    ys, y = [y0], y0
    for t0, t1 in zip(t[:-1], t[1:]):
        h = t1 - t0
        k1 = func(t0, y); k2 = func(t0 + h / 2, y + h / 2 * k1)
        k3 = func(t0 + h / 2, y + h / 2 * k2); k4 = func(t1, y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


class BNM(nn.Module):
    def __init__(self, n=10):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, n) * 0.1)

    def forward(self, t, x):
        return -x + torch.matmul(x, self.w)


class Model(nn.Module):
    def __init__(self, ode_func, n=10):
        super().__init__()
        self.lstm = nn.LSTM(3, n, batch_first=True)
        self.SC = nn.Parameter(torch.randn(n, n) * 0.1, requires_grad=True)  # <- unused_parameter
        self.ode_func = ode_func

    def forward(self, x):
        x0 = self.lstm(x)[0][:, -1]
        return odeint(self.ode_func, x0, torch.linspace(0, 0.72, 10), adjoint_params=(self.SC,))


torch.manual_seed(0)
model = Model(BNM())
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, target = torch.randn(4, 5, 3), torch.randn(10, 4, 10)
sc_before = model.SC.detach().clone()
for step in range(3):
    loss = F.mse_loss(model(x), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"SC grad: {model.SC.grad}; SC changed: {not torch.equal(model.SC, sc_before)}")
