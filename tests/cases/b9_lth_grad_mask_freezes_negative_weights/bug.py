"""Lottery-ticket training (rahulvigneswaran/Lottery-Ticket-Hypothesis-in-Pytorch#5): "freezing pruned weights by
making their gradients zero" uses np.where(tensor < EPS, 0, grad), which zeroes the gradient of every negative
weight as well, so about half of each weight matrix gets its gradient masked before every step and never changes,
even before anything was pruned (the fix compares abs(tensor))."""
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EPS = 1e-6
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x, y = torch.randn(128, 10), torch.randint(0, 3, (128,))
w0 = model[0].weight.detach().clone()
for step in range(30):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    for name, p in model.named_parameters():
        if "weight" in name:
            tensor = p.data.cpu().numpy()
            grad_tensor = p.grad.data.cpu().numpy()
            grad_tensor = np.where(tensor < EPS, 0, grad_tensor)  # <- no_update
            p.grad.data = torch.from_numpy(grad_tensor)
    optimizer.step()
negative = w0 < 0
moved = (model[0].weight.detach() != w0)
print(f"loss {loss.item():.4f}; negative weights that moved: {int(moved[negative].sum())} of {int(negative.sum())}")
