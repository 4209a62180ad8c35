"""Walk the arguments of an intercepted torch call: the tensors in them, which ones an in-place op
writes, and the leaves of the nested data given to ``torch.tensor``. One walker for every handler."""
from __future__ import annotations

from typing import Any, Iterable, Iterator

import torch

Tensor = torch.Tensor


def flat(args: tuple) -> Iterator[Any]:
    """The arguments, with list and tuple arguments opened one level (``torch.cat([a, b])``)."""
    for arg in args:
        if type(arg) in (list, tuple):
            yield from arg
        else:
            yield arg


def tensors_in(args: tuple, kwargs: dict | None) -> list[Tensor]:
    """Every tensor among the arguments (one level into lists and tuples) and keyword arguments."""
    found = [a for a in flat(args) if isinstance(a, Tensor)]
    if kwargs:
        found.extend(v for v in kwargs.values() if isinstance(v, Tensor))
    return found


def requires_grad_in(args: tuple, kwargs: dict) -> bool:
    """Whether any tensor argument (also inside a list or tuple argument) requires grad."""
    for arg in args:
        if isinstance(arg, Tensor):
            if arg.requires_grad:
                return True
        elif type(arg) in (list, tuple):
            for item in arg:
                if isinstance(item, Tensor) and item.requires_grad:
                    return True
    if kwargs:
        for value in kwargs.values():
            if isinstance(value, Tensor) and value.requires_grad:
                return True
    return False


def any_requires_grad(values: Iterable[Any], start: int) -> bool:
    """Whether any tensor among ``values`` (from index ``start``) requires grad."""
    for index, value in enumerate(values):
        if index >= start and isinstance(value, Tensor) and value.requires_grad:
            return True
    return False


def inplace_targets(args: tuple) -> list[Tensor]:
    """The tensors an in-place op writes: its first argument, or each tensor of a first list
    (``torch._foreach_add_``)."""
    if not args:
        return []
    first = args[0]
    if isinstance(first, Tensor):
        return [first]
    if type(first) in (list, tuple):
        return [t for t in first if isinstance(t, Tensor)]
    return []


def data_items(data: Any, limit: int = 10_000) -> list[Any]:
    """The leaves (tensors, numbers, arrays) of the nested lists and tuples given to ``torch.tensor``."""
    items: list[Any] = []
    stack = [data]
    while stack and len(items) < limit:
        item = stack.pop()
        if type(item) in (list, tuple):
            stack.extend(item)
        else:
            items.append(item)
    return items


def holds_tensor(out: Any) -> bool:
    """Whether an op's result is a tensor or a list/tuple holding one (not a metadata answer)."""
    return isinstance(out, Tensor) or (isinstance(out, (list, tuple)) and any(isinstance(o, Tensor) for o in out))


def op_label(func: Any) -> str:
    """The name an op goes by in messages (``add_``, ``data`` for the ``.data`` descriptor)."""
    name = getattr(func, "__name__", repr(func))
    if name in ("__get__", "__set__"):
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return name


def leaf_with_grad(tensor: Any) -> bool:
    """Whether ``tensor`` is a leaf that holds a gradient; False for one autograd refuses to look at (a view of several
    an op returned, whose base was changed in place since: even ``.is_leaf`` raises)."""
    try:
        return isinstance(tensor, Tensor) and tensor.is_leaf and tensor.grad is not None
    except RuntimeError:
        return False
