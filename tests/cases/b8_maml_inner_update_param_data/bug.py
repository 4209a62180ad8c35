"""A MAML meta-learner (KanishJebaMathewM/Truxify#13118): the inner update writes the adapted weights through
param.data, which is outside autograd, so the query loss has no path back to the meta-model and its parameters'
.grad stays None after meta_loss.backward()."""
import copy
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
meta_optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
inner_lr = 0.05


def inner_update(model, x, y):
    adapted = copy.deepcopy(model)
    loss = F.mse_loss(adapted(x), y)
    grads = torch.autograd.grad(loss, adapted.parameters(), create_graph=True)
    for param, grad in zip(adapted.parameters(), grads):
        param.data -= inner_lr * grad  # <- data_attr
    return adapted


for meta_step in range(5):
    meta_loss = 0.0
    for task in range(3):
        amp = 1.0 + task
        xs, xq = torch.rand(10, 1) * 6 - 3, torch.rand(10, 1) * 6 - 3
        adapted = inner_update(model, xs, amp * torch.sin(xs))
        meta_loss = meta_loss + F.mse_loss(adapted(xq), amp * torch.sin(xq))
    meta_optimizer.zero_grad()
    meta_loss.backward()
    meta_optimizer.step()
print("meta grad:", model[0].weight.grad, "meta loss", round(meta_loss.item(), 4))
