"""The fixed twin: the inner loop starts from the model's own weights (copy_initial_weights=False), so the
meta-gradient reaches them (facebookresearch/higher#69)."""
import contextlib

import torch
import torch.nn as nn
from torch.func import functional_call


@contextlib.contextmanager
def innerloop_ctx(model, opt, copy_initial_weights=True):
    names = [n for n, _ in model.named_parameters()]
    params = [p.detach().clone().requires_grad_() if copy_initial_weights else p for p in model.parameters()]
    lr = opt.param_groups[0]["lr"]

    class DiffOpt:
        def step(self, loss):
            grads = torch.autograd.grad(loss, params, create_graph=True)
            params[:] = [p - lr * g for p, g in zip(params, grads)]

    yield (lambda x: functional_call(model, dict(zip(names, params)), (x,))), DiffOpt()


torch.manual_seed(0)
x, y = torch.ones(1, 1), torch.ones(1, 1)
model = nn.Linear(1, 1, bias=False)
nn.init.constant_(model.weight, 0.5)
criterion = nn.MSELoss()
opt = torch.optim.SGD(model.parameters(), lr=1e-1)
for outer in range(2):
    opt.zero_grad()
    with innerloop_ctx(model, opt, copy_initial_weights=False) as (fmodel, diffopt):
        loss = criterion(fmodel(x), y)
        diffopt.step(loss)
        error = criterion(fmodel(x), y)
        error.backward()
    opt.step()
    print(f"outer step {outer}: grad of model weight: {model.weight.grad}, weight: {model.weight.item():.4f}")
