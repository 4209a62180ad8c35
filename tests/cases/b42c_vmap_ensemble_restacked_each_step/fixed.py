# Vectorised deep ensemble (torch.func model ensembling): several small nets
# with the same structure, trained together through vmap + functional_call.
# Fix: stack the members once; the stacked params are the new leaves that get
# the gradients, so they are what the optimizer must hold.
import copy

import torch as th
import torch.nn as nn
from torch.func import stack_module_state, functional_call

th.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 1)

    def forward(self, x):
        return th.sigmoid(self.fc(x))


n_members = 3
models = [Net() for _ in range(n_members)]
models = nn.ModuleList(models)

params, buffers = stack_module_state(models)
optimizer = th.optim.Adam(params.values(), lr=0.05)


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), x)


w_before = params['fc.weight'].detach().clone()

for epoch in range(20):
    data = th.rand(1, 2) * 2 - 1

    base_model = copy.deepcopy(models[0])
    base_model = base_model.to('meta')

    # minimise the ensemble's output (as in the report: the output is the loss)
    loss = th.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data).mean()

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("loss", loss.item())
print("stacked fc.weight.grad:", params['fc.weight'].grad)
print("stacked weight changed:", not th.equal(w_before, params['fc.weight'].detach()))
