"""snap-stanford/GEARS, issue #36 "A question about the direction loss".
https://github.com/snap-stanford/GEARS/issues/36

What the user saw: the direction loss in gears/utils.py loss_fct does not train
anything: changing direction_lambda leaves the gradients unchanged.
Why: the term is (sign(y - ctrl) - sign(pred - ctrl))**2; torch.sign has a zero
gradient everywhere, so the direction term sends nothing back to the model; only the
MSE term trains it.
Fix (maintainer): use a smooth surrogate, torch.tanh(pred - ctrl), for the prediction
side of the direction term.
"""
import torch
import torch.nn as nn


def loss_fct(pred, y, ctrl, direction_lambda=1e-1, gamma=2):
    losses = torch.sum((pred - y) ** (2 + gamma)) / pred.shape[0] / pred.shape[1]
    losses = losses + torch.sum(direction_lambda *
                                (torch.sign(y - ctrl) -
                                 torch.sign(pred - ctrl)) ** 2) / pred.shape[0] / pred.shape[1]  # <- cut_term
    return losses


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 6))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
x = torch.randn(32, 6)
ctrl = torch.randn(6)
y = ctrl + torch.randn(32, 6)
for step in range(5):
    optimizer.zero_grad()
    pred = model(x)
    loss = loss_fct(pred, y, ctrl)
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.4f}")

# Gradients with and without the direction term (direction_lambda 0.1 vs 0).
pred = model(x)
g_with = torch.autograd.grad(loss_fct(pred, y, ctrl, 1e-1), model[2].weight, retain_graph=True)[0]
g_without = torch.autograd.grad(loss_fct(pred, y, ctrl, 0.0), model[2].weight)[0]
print("direction term changes the gradient:", not torch.equal(g_with, g_without))
