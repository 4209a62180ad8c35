# Report: rtqichen/torchdiffeq issue #79 "Func parameters not getting updated"
#   https://github.com/rtqichen/torchdiffeq/issues/79
# An ODE-RNN (ODEGRUModel): between observations the GRU hidden state is evolved by
# odeint(self.ode_func, hx, ...), then the GRU cell reads the next input. The reporter fed
# the cell `hx.detach()`, which cuts the only path from the loss back through odeint, so
# the ODEFunc's parameters never get a gradient and never change. The maintainer (rtqichen)
# asked "Why do you have a detach here? `hx = self.grucell(inputs[0], hx.detach())`";
# the reporter removed it and the ode_func parameters were updated.
# torchdiffeq's odeint is inlined as a tiny fixed-step RK4 solver; embeddings and real
# data are replaced by random inputs.
import torch
import torch.nn as nn

torch.manual_seed(0)


def odeint(func, y0, t):
    # stand-in for torchdiffeq.odeint (method='rk4'), differentiable through every step
    ys = [y0]
    y = y0
    for i in range(len(t) - 1):
        t0, dt = t[i], t[i + 1] - t[i]
        k1 = func(t0, y)
        k2 = func(t0 + dt / 2, y + dt / 2 * k1)
        k3 = func(t0 + dt / 2, y + dt / 2 * k2)
        k4 = func(t0 + dt, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys.append(y)
    return torch.stack(ys)


class ODEFunc(nn.Module):

    def __init__(self, hidden_size):
        super(ODEFunc, self).__init__()

        self.net = nn.Sequential(
            nn.Linear(hidden_size, hidden_size),
            nn.Tanh(),
            nn.Linear(hidden_size, hidden_size)
        )

        for m in self.net.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0, std=0.1)
                nn.init.constant_(m.bias, val=0)

    def forward(self, t, y):
        return self.net(y)


class ODEGRUModel(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super(ODEGRUModel, self).__init__()
        self.hidden_size = hidden_size
        self.ode_func = ODEFunc(hidden_size)
        self.grucell = nn.GRUCell(input_size, hidden_size)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x, times):
        hx = torch.zeros(x.size(0), self.hidden_size)
        for i in range(x.size(1)):
            inputs = (x[:, i], times[i])
            if i > 0:
                hx = odeint(self.ode_func, hx, torch.stack([times[i - 1], times[i]]))[-1]
            hx = self.grucell(inputs[0], hx)
        return torch.sigmoid(self.fc(hx))


model = ODEGRUModel(input_size=4, hidden_size=8, output_size=1)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
criterion = nn.BCELoss()

x = torch.randn(16, 5, 4)
times = torch.linspace(0., 1., 5)
y = (torch.rand(16, 1) > 0.5).float()

w_before = model.ode_func.net[0].weight.clone()
for step in range(3):
    optimizer.zero_grad()
    loss = criterion(model(x, times), y)
    loss.backward()
    optimizer.step()

print("ode_func.net[0].weight.grad:", model.ode_func.net[0].weight.grad)
print("ode_func weight changed:", not torch.equal(w_before, model.ode_func.net[0].weight))
