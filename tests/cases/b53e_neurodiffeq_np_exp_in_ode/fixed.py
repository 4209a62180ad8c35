# neurodiffeq issue #75 "solving simple ode"
# https://github.com/NeuroDiffGym/neurodiffeq/issues/75
# The reporter wrote the ODE residual as
#     ode = lambda x, t: diff(x, t) + 5*x - np.exp(3*t)
# and solve() failed with "RuntimeError: Can't call numpy() on Tensor that
# requires grad": t is a grad-requiring tensor (neurodiffeq differentiates the
# network output w.r.t. t), and np.exp pulls it out of the graph.
# Fix (maintainer shuheng-liu, reporter confirmed "it works now"): use
# torch.exp(3*t) instead of np.exp(3*t).
# The neurodiffeq pieces the bug goes through (diff, FCNN, IVP,
# ExampleGenerator, solve) are rewritten below as small plain-torch code.
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

torch.manual_seed(0)


def diff(u, t, order=1):
    # neurodiffeq.diff: derivative of u w.r.t. t through autograd
    for _ in range(order):
        u = torch.autograd.grad(u, t, grad_outputs=torch.ones_like(u), create_graph=True)[0]
    return u


class Swish(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(x)


class FCNN(nn.Module):
    def __init__(self, n_input_units=1, n_output_units=1, n_hidden_units=5, n_hidden_layers=1, actv=Swish):
        super().__init__()
        layers = [nn.Linear(n_input_units, n_hidden_units), actv()]
        for _ in range(n_hidden_layers):
            layers += [nn.Linear(n_hidden_units, n_hidden_units), actv()]
        layers.append(nn.Linear(n_hidden_units, n_output_units))
        self.NN = nn.Sequential(*layers)

    def forward(self, t):
        return self.NN(t)


class IVP:
    # x(t_0) = x_0 enforced by reparameterisation
    def __init__(self, t_0, x_0):
        self.t_0, self.x_0 = t_0, x_0

    def enforce(self, net, t):
        return self.x_0 + (1 - torch.exp(-(t - self.t_0))) * net(t)


class ExampleGenerator:
    def __init__(self, size, t_min, t_max, method="equally-spaced-noisy"):
        self.size, self.t_min, self.t_max = size, t_min, t_max

    def get_examples(self):
        t = torch.linspace(self.t_min, self.t_max, self.size)
        t = t + 0.01 * torch.randn(self.size)
        return t.reshape(-1, 1).requires_grad_(True)


def solve(ode, condition, t_min, t_max, net, train_generator, optimizer, max_epochs):
    loss_history = []
    for epoch in range(max_epochs):
        t = train_generator.get_examples()
        x = condition.enforce(net, t)
        residual = ode(x, t)
        loss = (residual ** 2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_history.append(loss.item())
    return net, loss_history


ode = lambda x, t: diff(x, t) + 5 * x - torch.exp(3 * t)
t_min, t_max = 0.0, 2.0
N = 64
fcnn = FCNN(n_hidden_units=5, n_hidden_layers=1, actv=Swish)
adam = optim.Adam(fcnn.parameters(), lr=0.001)
init_ode = IVP(t_0=t_min, x_0=0.0)
train_gen = ExampleGenerator(N, t_min=t_min, t_max=1, method="equally-spaced-noisy")

solution, loss_history = solve(
    ode=ode,
    condition=init_ode,
    t_min=t_min, t_max=t_max,
    net=fcnn,
    train_generator=train_gen,
    optimizer=adam,
    max_epochs=50,
)
print("loss first/last:", loss_history[0], loss_history[-1])
print("last layer weight grad:", fcnn.NN[-1].weight.grad)
