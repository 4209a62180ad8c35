"""pytorch/pytorch issue #120538 "'torch.func.vmap' incompatible with `torch.autograd.grad` and tensor slicing",
https://github.com/pytorch/pytorch/issues/120538: an ensemble of nn.Linear models is stacked with
`stack_module_state` and evaluated with `vmap(functional_call)`; the reporter then took each model's gradient
with `torch.autograd.grad(loss, weight, create_graph=True, allow_unused=True)` for `loss, weight in
zip(losses, params['weight'])` and got `(None,)` for every model, while the same call on the whole stacked
`params['weight']` gave the gradients (closed as expected behaviour; the maintainers' explanation of the same
mechanism in #89857: a slice taken after the forward "doesn't participate in forward computation", so it has
no gradient).
Why: iterating `params['weight']` makes new view tensors after the losses were computed; the losses depend on
the stacked leaf, not on those views, so autograd.grad finds no path to them.
Fix: differentiate with respect to the stacked `params['weight']` (the leaf the forward used) and take row i.
Here the per-model gradients feed a gradient-norm penalty added to the ensemble's training loss."""
import torch
import torch.nn as nn
from torch.func import functional_call, stack_module_state, vmap

torch.manual_seed(0)
models = [nn.Linear(2, 1) for _ in range(5)]
params, buffers = stack_module_state(models)
base = models[0].to("meta")
loss_fn = nn.MSELoss()


def compute_loss(params, buffers, inputs, outputs):
    preds = functional_call(base, (params, buffers), (inputs,))
    return loss_fn(preds, outputs)


optimizer = torch.optim.Adam(list(params.values()), lr=0.05)
inputs = torch.randn(5, 16, 2)
outputs = inputs.sum(-1, keepdim=True) + 0.1 * torch.randn(5, 16, 1)

for step in range(5):
    losses = vmap(compute_loss)(params, buffers, inputs, outputs)
    penalty = torch.zeros(())
    grads = []
    for i, loss in enumerate(losses):
        weight = params["weight"]
        g = torch.autograd.grad(loss, weight, create_graph=True, allow_unused=True)[0][i]
        grads.append(g)
        if g is not None:
            penalty = penalty + g.pow(2).sum()
    if step == 0:
        print("per-model weight grads:", [None if g is None else tuple(g.shape) for g in grads])
    total = losses.sum() + 0.1 * penalty
    optimizer.zero_grad()
    total.backward()
    optimizer.step()

print("gradient penalty:", penalty.item())
print("ensemble loss:", losses.sum().item())
