"""The fixed twin: the boundary coordinates are detached into a new leaf before asking for their gradient (erfanhamdi/pinn-torch#1)."""
import math

import torch
from torch import nn


def derivative(dy, x):
    return torch.autograd.grad(dy, x, grad_outputs=torch.ones_like(dy), create_graph=True)[0]


def mse_b(model, t_b):
    x_b_lower = 2 * math.pi * torch.exp(-t_b)
    x_b_lower = x_b_lower.detach().requires_grad_(True)
    h_b_lower = model(torch.stack((x_b_lower, t_b), axis=1))
    h_u_b_lower_x = derivative(h_b_lower[:, 0], x_b_lower)
    return (h_u_b_lower_x ** 2).mean()


def mse_f(model, x_f, t_f):
    u = model(torch.stack((x_f, t_f), axis=1))[:, 0]
    u_t = derivative(u, t_f)
    u_xx = derivative(derivative(u, x_f), x_f)
    return ((u_t - 0.1 * u_xx) ** 2).mean()


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
t_b = torch.rand(64, requires_grad=True)
x_f = (torch.rand(128) * 2 * math.pi).requires_grad_(True)
t_f = torch.rand(128, requires_grad=True)
for epoch in range(5):
    loss = mse_b(model, t_b) + mse_f(model, x_f, t_f)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.6f}")
