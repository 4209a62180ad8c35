# Report: "Issue in the example" (learn2learn.utils.detach_module docstring)
# URL: https://github.com/learnables/learn2learn/issues/308
# What went wrong: the documented recipe "clone = clone_module(net);
#   detach_module(clone); error = loss(clone(X), y); error.backward()" crashes with
#   "element 0 of tensors does not require grad and does not have a grad_fn":
#   detach_module() calls .detach_() on every cloned parameter and, with the default
#   keep_requires_grad=False, leaves them with requires_grad=False, so nothing in the
#   loss is differentiable and the detached clone can never be trained.
# Fix (maintainer confirmed, docstring updated): call
#   detach_module(clone, keep_requires_grad=True).
# clone_module / detach_module are reduced copies of learn2learn/utils/__init__.py.
import torch
from torch import nn

torch.manual_seed(0)


def clone_module(module, memo=None):
    """Copy of a module whose parameters are torch.clone()s of the originals."""
    if memo is None:
        memo = {}
    if not isinstance(module, torch.nn.Module):
        return module
    clone = module.__new__(type(module))
    clone.__dict__ = module.__dict__.copy()
    clone._parameters = clone._parameters.copy()
    clone._buffers = clone._buffers.copy()
    clone._modules = clone._modules.copy()

    for param_key in module._parameters:
        if module._parameters[param_key] is not None:
            param = module._parameters[param_key]
            param_ptr = param.data_ptr
            if param_ptr in memo:
                clone._parameters[param_key] = memo[param_ptr]
            else:
                cloned = param.clone()
                clone._parameters[param_key] = cloned
                memo[param_ptr] = cloned

    for module_key in clone._modules:
        clone._modules[module_key] = clone_module(module._modules[module_key], memo=memo)
    return clone


def detach_module(module, keep_requires_grad=False):
    """Detaches all parameters/buffers of a previously cloned module from its graph."""
    if not isinstance(module, torch.nn.Module):
        return
    for param_key in module._parameters:
        if module._parameters[param_key] is not None:
            requires_grad = module._parameters[param_key].requires_grad
            detached = module._parameters[param_key].detach_()
            if keep_requires_grad and requires_grad:
                module._parameters[param_key].requires_grad_()

    for buffer_key in module._buffers:
        if module._buffers[buffer_key] is not None and \
                module._buffers[buffer_key].requires_grad:
            module._buffers[buffer_key] = module._buffers[buffer_key].detach_()
            if keep_requires_grad:
                module._buffers[buffer_key].requires_grad_()

    for module_key in module._modules:
        detach_module(module._modules[module_key], keep_requires_grad=keep_requires_grad)


X = torch.randn(16, 20)
y = torch.randint(0, 2, (16,))
loss = nn.CrossEntropyLoss()

net = nn.Sequential(nn.Linear(20, 10), nn.ReLU(), nn.Linear(10, 2))
clone = clone_module(net)
detach_module(clone, keep_requires_grad=True)
optimizer = torch.optim.SGD(clone.parameters(), lr=0.1)

for step in range(20):
    error = loss(clone(X), y)
    optimizer.zero_grad()
    error.backward()  # Gradients are back-propagated on clone, not net.
    optimizer.step()

print("clone[0].weight.grad norm:", clone[0].weight.grad.norm().item())
print("final loss:", error.item())
