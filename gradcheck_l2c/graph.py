"""Iterative walks over autograd graphs: never recursive, so any depth works."""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import torch


def iter_nodes(roots: Iterable[Any]) -> Iterator[Any]:
    """Yield every autograd node reachable from ``roots`` once, parents before children."""
    stack = [node for node in roots if node is not None]
    seen: set[int] = {id(node) for node in stack}
    keep_alive = list(stack)  # ids stay unique only while the nodes live
    while stack:
        node = stack.pop()
        yield node
        for child, _ in node.next_functions:
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                keep_alive.append(child)
                stack.append(child)


def leaf_tensors(roots: Iterable[Any]) -> list[torch.Tensor]:
    """The leaf tensors (``AccumulateGrad`` variables) a backward from ``roots`` would write to."""
    return [node.variable for node in iter_nodes(roots) if hasattr(node, "variable")]


def grad_roots(tensors: Iterable[torch.Tensor]) -> list[Any]:
    """The autograd nodes a backward from ``tensors`` starts at (a leaf's accumulator if needed)."""
    roots = []
    for tensor in tensors:
        if tensor.grad_fn is not None:
            roots.append(tensor.grad_fn)
        elif tensor.requires_grad:
            roots.append(tensor.view_as(tensor).grad_fn.next_functions[0][0])
    return roots


def signature(root: Any) -> int:
    """A hash of a graph's shape (node types and edges), equal across iterations of a loop."""
    order: dict[int, int] = {}
    parts: list[tuple[str, tuple[int, ...]]] = []
    nodes = list(iter_nodes([root]))
    for index, node in enumerate(nodes):
        order[id(node)] = index
    for node in nodes:
        children = tuple(order[id(c)] for c, _ in node.next_functions if c is not None)
        parts.append((type(node).__name__, children))
    return hash(tuple(parts))
