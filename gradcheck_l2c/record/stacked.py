"""Norms of many small tensors in a few calls (``--grad-stats``' norms, ``--nan``'s look at the gradients).

On a CPU a torch call costs about a microsecond whatever its size, more than a small norm's arithmetic: an
op-bound network's hundred-odd biases and weights cost that many calls one by one. Tensors of one shape, dtype
and device are stacked (small ones only, so that the copies stay small) and reduced in one call; larger and
empty ones are reduced one by one in one ``_foreach_norm``. A plan, made once for a list of tensors, says which
go together and puts the norms back in the list's order.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from gradcheck_l2c.record.torch_internals import foreach_norm

Tensor = torch.Tensor
#: Tensors of at most ``SMALL`` elements are stacked; one stack (a copy) holds at most ``STACKED`` elements.
SMALL, STACKED = 1 << 16, 1 << 22


@dataclass
class StackPlan:
    """Positions of tensors to stack (small ones of one shape, dtype and device, up to ``STACKED`` elements a
    stack), the rest's positions, and the order that puts the norms back in the tensors' order."""

    groups: list[list[int]]
    alone: list[int]
    order: Tensor


def stack_plan(tensors: list[Tensor]) -> StackPlan:
    """Which of ``tensors`` are stacked together; good for any list of tensors of the same shapes, dtypes and
    devices in the same order."""
    groups: dict[tuple, list[list[int]]] = {}
    alone = []
    for i, tensor in enumerate(tensors):
        size = tensor.numel()
        if not 0 < size <= SMALL:
            alone.append(i)
            continue
        kind = groups.setdefault((tensor.shape, tensor.dtype, tensor.device), [[]])
        if (len(kind[-1]) + 1) * size > STACKED:
            kind.append([])
        kind[-1].append(i)
    stacks = [group for kind in groups.values() for group in kind]
    taken = [i for group in stacks for i in group] + alone
    order = torch.empty(len(taken), dtype=torch.long)
    order[taken] = torch.arange(len(taken))
    return StackPlan(stacks, alone, order)


def stacked_norms(tensors: list[Tensor], plan: StackPlan) -> Tensor:
    """The norm of each tensor, one stack and one norm per group of the plan."""
    parts = [torch.linalg.vector_norm(torch.stack([tensors[i] for i in group]).reshape(len(group), -1), dim=1)
             for group in plan.groups]
    if plan.alone:
        parts.append(torch.stack(foreach_norm([tensors[i] for i in plan.alone])))
    return torch.cat(parts)[plan.order]
