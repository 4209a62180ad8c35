"""Step 1 of an L2C round: S epochs of local SGD for every node a process holds, one node at a time or batched.

Parameters travel as flat vectors, one row per node (`Layout` converts). Node i's batch order comes from its
own generator (`node_generator`), so a node trains the same way whichever process holds it and whichever
path runs it. The ``loop`` path trains the template model node by node with ordinary backward/step; the
``vmap`` path trains ``chunk`` nodes at once with `torch.func.vmap` over `torch.func.grad`, padding nodes with
less data with masked samples (a masked step is an exact no-op for plain SGD). Every vmap call has exactly
``chunk`` nodes and every node ``steps`` batches of ``batch_size`` padded slots, sizes fixed by the config and
the whole dataset, so the arithmetic does not depend on how nodes are split over processes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

from .data import NodeData

PATHS = ("loop", "vmap")


class Layout:
    """Names and shapes of a model's parameters, to move between a module, flat vectors and named views."""

    def __init__(self, model: nn.Module) -> None:
        self.names = [name for name, _ in model.named_parameters()]
        self.shapes = [p.shape for _, p in model.named_parameters()]
        self.sizes = [p.numel() for _, p in model.named_parameters()]
        self.size = sum(self.sizes)

    def flatten(self, model: nn.Module) -> torch.Tensor:
        """The model's parameters as one detached vector."""
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def unflatten(self, vector: torch.Tensor) -> dict[str, torch.Tensor]:
        """Named views of a flat vector (differentiable: gradients reach the vector)."""
        return {n: v.view(s) for n, v, s in zip(self.names, vector.split(self.sizes), self.shapes)}

    def stacked(self, rows: torch.Tensor) -> dict[str, torch.Tensor]:
        """Named (m, *shape) tensors from m flat rows."""
        return {n: v.reshape(len(rows), *s) for n, v, s in zip(self.names, rows.split(self.sizes, dim=1), self.shapes)}

    def rows(self, stacked: dict[str, torch.Tensor]) -> torch.Tensor:
        """The inverse of `stacked`."""
        return torch.cat([stacked[n].reshape(len(stacked[n]), -1) for n in self.names], dim=1)


def node_generator(seed: int, node: int) -> torch.Generator:
    """Node ``node``'s batch-order generator, seeded from the run seed and the node id (CPU, as on CUDA)."""
    (state,) = np.random.SeedSequence([seed, node]).generate_state(1, np.uint64)
    return torch.Generator().manual_seed(int(state))


def loop(
    model: nn.Module,
    layout: Layout,
    theta: torch.Tensor,
    nodes: Sequence[NodeData],
    generators: Sequence[torch.Generator],
    epochs: int,
    lr: float,
    batch_size: int,
) -> torch.Tensor:
    """Train each node from its row of ``theta`` with the template ``model`` as a working copy; new rows."""
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=lr)  # plain SGD keeps no state, so one serves every node
    out = torch.empty_like(theta)
    for k, (node, generator) in enumerate(zip(nodes, generators)):
        with torch.no_grad():
            for p, value in zip(params, layout.unflatten(theta[k]).values()):
                p.copy_(value)
        for _ in range(epochs):
            order = torch.randperm(len(node.train_y), generator=generator).to(node.train_x.device)
            for batch in order.split(batch_size):
                optimizer.zero_grad()
                F.nll_loss(model(node.train_x[batch]), node.train_y[batch]).backward()
                optimizer.step()
        out[k] = layout.flatten(model)
    return out


def vmap_chunks(
    model: nn.Module,
    layout: Layout,
    theta: torch.Tensor,
    nodes: Sequence[NodeData],
    generators: Sequence[torch.Generator],
    epochs: int,
    lr: float,
    batch_size: int,
    steps: int,
    chunk: int,
) -> torch.Tensor:
    """Train ``chunk`` nodes at a time (the last chunk padded with copies of its first node); new rows.

    ``steps`` is the number of batches per epoch of the node with the most training data in the whole run.
    """

    def masked_loss(params, x, y, mask):
        losses = F.nll_loss(functional_call(model, params, (x,)), y, reduction="none")
        return (losses * mask).sum() / mask.sum().clamp(min=1)

    step = vmap(grad(masked_loss))
    out = torch.empty_like(theta)
    device = theta.device
    for first in range(0, len(nodes), chunk):
        real = list(range(first, min(first + chunk, len(nodes))))
        members = real + [real[0]] * (chunk - len(real))
        params = layout.stacked(theta[members])
        for _ in range(epochs):
            orders = [torch.randperm(len(nodes[k].train_y), generator=generators[k]) for k in real]
            orders += [orders[0]] * (chunk - len(real))
            for s in range(steps):
                index = torch.zeros(chunk, batch_size, dtype=torch.long)
                mask = torch.zeros(chunk, batch_size)
                for m, order in enumerate(orders):
                    batch = order[s * batch_size : (s + 1) * batch_size]
                    index[m, : len(batch)] = batch
                    mask[m, : len(batch)] = 1
                index, mask = index.to(device), mask.to(device)
                x = torch.stack([nodes[k].train_x[index[m]] for m, k in enumerate(members)])
                y = torch.stack([nodes[k].train_y[index[m]] for m, k in enumerate(members)])
                grads = step(params, x, y, mask)
                params = {name: p - lr * grads[name] for name, p in params.items()}
        out[real] = layout.rows(params)[: len(real)]
    return out


def steps_per_epoch(train_sizes: Sequence[int], batch_size: int) -> int:
    """Batches per epoch of the largest node: the vmap path pads every node to it."""
    return max(math.ceil(size / batch_size) for size in train_sizes)
