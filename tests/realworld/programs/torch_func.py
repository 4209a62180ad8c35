"""torch.func: per-sample gradients with vmap(grad(...)) over functional_call, and a training step
on parameters held as a dict of detached leaves (the make_functional style)."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 2))
    params = {k: v.detach().requires_grad_() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    optimizer = torch.optim.SGD(params.values(), lr=0.1)

    def compute_loss(params, buffers, sample, target):
        predictions = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.cross_entropy(predictions, target.unsqueeze(0))

    per_sample_grads = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
    x, y = torch.randn(12, 5), torch.randint(0, 2, (12,))
    for step in range(4):
        sample_grads = per_sample_grads({k: v.detach() for k, v in params.items()}, buffers, x, y)
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in sample_grads.values()]).norm(dim=0)
        optimizer.zero_grad()
        loss = F.cross_entropy(functional_call(model, params, (x,)), y)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f} max per-sample grad norm {norms.max().item():.6f}")
    if os.environ.get("REALWORLD_STATE"):
        torch.save({k: v.detach() for k, v in params.items()}, os.environ["REALWORLD_STATE"])


if __name__ == "__main__":
    main()
