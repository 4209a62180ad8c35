# Vectorised deep ensemble (torch.func model ensembling): several small nets
# with the same structure, trained together through vmap + functional_call.
# Shape of pytorch/pytorch#120581: the optimizer is built on the ModuleList's
# parameters, and every step re-stacks the members with stack_module_state.
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

optimizer = th.optim.Adam(models.parameters(), lr=0.05)


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), x)


w_before = models[0].fc.weight.detach().clone()

for epoch in range(20):
    data = th.rand(1, 2) * 2 - 1

    params, buffers = stack_module_state(models)  # <- detach

    base_model = copy.deepcopy(models[0])
    base_model = base_model.to('meta')

    # minimise the ensemble's output (as in the report: the output is the loss)
    loss = th.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data).mean()

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print("loss", loss.item())
print("member 0 fc.weight.grad:", models[0].fc.weight.grad)
print("member 0 weight changed:", not th.equal(w_before, models[0].fc.weight.detach()))
