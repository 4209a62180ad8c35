"""The fixed twin of maml_inner_update_param_data (https://github.com/KanishJebaMathewM/Truxify/issues/13118)."""
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
meta_optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
inner_lr = 0.05


def inner_update(model, x, y):
    params = dict(model.named_parameters())
    loss = F.mse_loss(torch.func.functional_call(model, params, (x,)), y)
    grads = torch.autograd.grad(loss, list(params.values()), create_graph=True)
    fast = {name: p - inner_lr * g for (name, p), g in zip(params.items(), grads)}
    return lambda inputs: torch.func.functional_call(model, fast, (inputs,))


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
print("meta grad is None:", model[0].weight.grad is None, "meta loss", round(meta_loss.item(), 4))
