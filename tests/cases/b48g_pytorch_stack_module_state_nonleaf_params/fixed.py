# Report: pytorch/pytorch PR #92278 "stack_module_state should return unrelated parameters"
#   https://github.com/pytorch/pytorch/pull/92278
# torch.func.stack_module_state (the replacement for functorch.combine_state_for_ensemble) stacked
# each parameter of the ensemble with torch.stack and returned the result as is: a NON-LEAF tensor
# (grad_fn=StackBackward). The common usage is to run the ensemble with vmap(functional_call),
# call loss.backward() and optimize directly over the stacked parameters -- but a non-leaf gets no
# .grad, so the stacked weights the training loop updates have grad None (PyTorch warns "The .grad
# attribute of a Tensor that is not a leaf Tensor is being accessed") and the update fails.
# stack_module_state below is the pre-fix library function (trimmed); the training loop follows
# the torch.func model-ensembling tutorial.
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, vmap

torch.manual_seed(0)


def construct_stacked_leaf(tensors, name):
    all_requires_grad = all(t.requires_grad for t in tensors)
    none_requires_grad = all(not t.requires_grad for t in tensors)
    if not all_requires_grad and not none_requires_grad:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    result = torch.stack(tensors)
    if all_requires_grad:
        result = result.detach().requires_grad_()
    return result


def stack_module_state(models):
    all_params = [dict(model.named_parameters()) for model in models]
    params = {k: construct_stacked_leaf(tuple(params[k] for params in all_params), k) for k in all_params[0]}
    all_buffers = [dict(model.named_buffers()) for model in models]
    buffers = {k: torch.stack(tuple(buffers[k] for buffers in all_buffers)) for k in all_buffers[0]}
    return params, buffers


class SimpleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


num_models = 3
models = [SimpleMLP() for _ in range(num_models)]
params, buffers = stack_module_state(models)

base_model = copy.deepcopy(models[0]).to("meta")


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


data = torch.randn(32, 8)
targets = torch.randint(0, 4, (32,))
lr = 0.1

for step in range(5):
    logits = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data)  # [num_models, 32, 4]
    loss = F.cross_entropy(logits.flatten(0, 1), targets.repeat(num_models))
    loss.backward()
    with torch.no_grad():
        for name, p in params.items():
            p -= lr * p.grad
            p.grad = None
    print(step, loss.item())
