"""Iterative walks over autograd graphs: never recursive, so any depth works."""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import torch

#: Nodes the tracer walks at most in one graph while user code runs. torch 2.14 can overflow the C
#: stack when it frees a chain of tens of thousands of nodes that Python has looked at (a segfault
#: measured past ~40,000 saved-tensor ops on an 8 MiB stack), so walks during a trace stay well below.
SAFE_WALK = 10_000


T = TypeVar("T")
_LARGE_STACK = 1 << 30


def call_with_large_stack(function: Callable[[], T]) -> T:
    """Run ``function`` in a thread with a 1 GiB stack, where freeing a huge walked graph is safe.

    Whatever walks a whole graph (rendering) should also drop its last references to it in there.
    """
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as error:  # re-raised in the calling thread
            outcome["error"] = error

    previous = threading.stack_size(_LARGE_STACK)
    try:
        worker = threading.Thread(target=target, name="gradcheck-l2c-graph")
        worker.start()
    finally:
        threading.stack_size(previous)
    worker.join()
    if "error" in outcome:
        raise outcome.pop("error")
    return outcome["value"]


def iter_nodes(roots: Iterable[Any], limit: int | None = None,
               expand: Callable[[Any], bool] | None = None) -> Iterator[Any]:
    """Yield every autograd node reachable from ``roots`` once (at most ``limit`` of them); where
    ``expand(node)`` is false the walk yields the node but goes no further through it."""
    stack = [node for node in roots if node is not None]
    seen = set(stack)  # the nodes themselves (equal only to themselves): kept alive, no id reused meanwhile
    count = 0
    while stack:
        node = stack.pop()
        yield node
        count += 1
        if limit is not None and count >= limit:
            return
        if expand is not None and not expand(node):
            continue
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)


def leaf_tensors(roots: Iterable[Any], limit: int | None = SAFE_WALK) -> list[torch.Tensor]:
    """The leaf tensors (``AccumulateGrad`` variables) a backward from ``roots`` would write to."""
    return [node.variable for node in iter_nodes(roots, limit) if hasattr(node, "variable")]


def grad_roots(tensors: Iterable[torch.Tensor]) -> list[Any]:
    """The autograd nodes a backward from ``tensors`` starts at (a leaf's accumulator if needed: found through a view
    made with gradients on, since a backward may run under ``no_grad``; an inference tensor made a leaf has none to
    find, and nothing below it)."""
    roots = []
    for tensor in tensors:
        if tensor.grad_fn is not None:
            roots.append(tensor.grad_fn)
        elif tensor.requires_grad:
            with torch.enable_grad():
                view = tensor.view_as(tensor).grad_fn
            if view is not None:
                roots.append(view.next_functions[0][0])
    return roots


def signature(root: Any, limit: int | None = None) -> int:
    """A hash of a graph's shape (node types and edges), equal across iterations of a loop."""
    order: dict[int, int] = {}
    parts: list[tuple[str, tuple[int, ...]]] = []
    nodes = list(iter_nodes([root], limit))
    for index, node in enumerate(nodes):
        order[id(node)] = index
    for node in nodes:
        children = tuple(order.get(id(c), -1) for c, _ in node.next_functions if c is not None)
        parts.append((type(node).__name__, children))
    return hash(tuple(parts))


_ZERO = "gradcheck_zero_derivative"


def mark_zero_derivative(tensor: torch.Tensor) -> None:
    """The node that made ``tensor`` sends back only zeros (``round``, ``torch.normal``'s parameters)."""
    global zero_marked
    if tensor.grad_fn is not None:
        tensor.grad_fn.metadata[_ZERO] = True
        zero_marked = True


#: Whether any node was marked as sending back only zeros in this process: until one is, every path carries gradient
#: and a walk need not look at each node's metadata.
zero_marked = False


def carries_gradient(node: Any) -> bool:
    """Whether a gradient can pass through ``node``: not one marked by :func:`mark_zero_derivative`."""
    return not node.metadata.get(_ZERO, False)


def grad_fn_of(tensor: torch.Tensor) -> Any:
    """``tensor.grad_fn``, or None where PyTorch refuses to build it: a view made under no_grad whose
    base was then written in place (``nn.Embedding``'s padding row) raises on the attribute read."""
    try:
        return tensor.grad_fn
    except RuntimeError:
        return None


def node_site(node: Any) -> str | None:
    """The user line that created an autograd node (``train.py:12``), when the tracer recorded it."""
    site = node.metadata.get("gradcheck_site") if node is not None else None
    return f"{os.path.basename(site[0])}:{site[1]}" if site else None
