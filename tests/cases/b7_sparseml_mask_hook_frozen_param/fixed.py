"""The fixed twin: the modifier registers the gradient-mask hook only on weights that require grad (the workaround
in neuralmagic/sparseml#1438); the frozen stem is still masked after each step."""
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn


class GMPruningModifier:
    def __init__(self, layers, sparsity=0.5):
        self._layers = layers
        self._params = [layer.weight for layer in layers]
        self._masks = [(p.detach().abs() > p.detach().abs().flatten().kthvalue(int(sparsity * p.numel())).values).float() for p in self._params]
        self._gradient_hooks = [None] * len(self._params)

    def _hook_mask_gradient(self, idx, grad):
        return grad * self._masks[idx]

    def create_hooks(self):
        for idx, (param, layer) in enumerate(zip(self._params, self._layers)):
            if self._gradient_hooks[idx] is None and param.requires_grad:
                self._gradient_hooks[idx] = param.register_hook(partial(self._hook_mask_gradient, idx))

    def apply_masks(self):
        with torch.no_grad():
            for param, mask in zip(self._params, self._masks):
                param.mul_(mask)


torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
model[0].requires_grad_(False)  # the pretrained stem stays frozen
modifier = GMPruningModifier([model[0], model[2], model[4]])
modifier.create_hooks()
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
x, y = torch.randn(64, 16), torch.randint(0, 4, (64,))
for step in range(5):
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    modifier.apply_masks()
    print(f"step {step}: loss {loss.item():.4f}")
