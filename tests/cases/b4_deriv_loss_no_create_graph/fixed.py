"""The fixed twin: create_graph=True keeps grad_x a function of the weights, so loss_z trains them."""
import torch
from torch import nn
from torch.autograd import grad

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(3, 30), nn.ReLU(), nn.Linear(30, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
x = torch.randn(64, 3)
y = (5 * torch.sin(x) + 3 * torch.cos(x)).sum(dim=-1).unsqueeze(-1)
z = (5 * torch.cos(x) - 3 * torch.sin(x)).sum(dim=-1).unsqueeze(-1)
for epoch in range(3):
    x.requires_grad = True
    optimizer.zero_grad()
    output = model(x)
    grad_x = grad(output.sum(), x, create_graph=True)[0]
    loss_y = nn.MSELoss()(output, y)
    loss_z = nn.MSELoss()(grad_x.sum(dim=-1).unsqueeze(-1), z)
    loss = loss_y + loss_z
    loss.backward()
    optimizer.step()
    print(f"Loss_y = {loss_y.item():.4f} | Loss_z = {loss_z.item():.4f} | loss_z.grad_fn = {loss_z.grad_fn}")
