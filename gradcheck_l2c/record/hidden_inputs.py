"""Tensors with history handed to a custom ``autograd.Function`` inside another argument (a settings tuple, a list, a
dict, a plain object): ``apply`` tracks only the tensors passed as arguments themselves, so no gradient flows back
through the others (3D Gaussian splatting's camera pose, carried in ``raster_settings.viewmatrix``). The cut is named
where the value entered the calls that lead to ``apply``: the first user frame, outward from the one that called
it, whose function was not handed the value as an argument (a thin ``render(..., viewmatrix)`` wrapper passes it on).
"""
from __future__ import annotations

import itertools
import types
from typing import Any

import torch
from torch import nn

from gradcheck_l2c.record.locations import USER, Site, frame_kind, frame_site

#: How deep arguments are opened: a settings object inside a list, no further.
DEPTH = 2
#: The items of one container looked at: a Function handed a long list is looked at by its first ones.
ITEMS = 256
#: Values never opened: a module's parameters are its own (a Function given a layer runs it), code and types hold none.
_CLOSED = (nn.Module, type, types.FunctionType, types.MethodType, types.ModuleType, types.BuiltinFunctionType)
_SCALARS = (bool, int, float, complex, str, bytes, type(None))


def hidden_tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors that require grad inside the arguments that are not tensors themselves (none when an argument
    cannot be looked into: an object whose attribute lookup raises is the script's business, not the tool's)."""
    found: dict[int, torch.Tensor] = {}
    try:
        for value in (*args, *kwargs.values()):
            if not isinstance(value, torch.Tensor):
                _collect(value, found, DEPTH)
    except Exception:
        return []
    return list(found.values())


def entry_site(hidden: list[torch.Tensor], frame: Any) -> Site | None:
    """Outward from ``frame`` (the caller of ``apply``), the line of the first user frame whose function was not
    handed one of ``hidden`` (or a value holding it) as an argument; the innermost user frame if every one was."""
    wanted = {id(t) for t in hidden}
    innermost = None
    while frame is not None:
        if frame_kind(frame.f_code.co_filename) == USER:
            innermost = innermost or frame
            if not _handed(frame, wanted):
                return frame_site(frame)
        frame = frame.f_back
    return frame_site(innermost) if innermost is not None else None


def _handed(frame: Any, wanted: set[int]) -> bool:
    """Whether the frame's function got one of the ``wanted`` tensors through its arguments."""
    code, values = frame.f_code, frame.f_locals
    count = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
    found: dict[int, torch.Tensor] = {}
    try:
        for name in code.co_varnames[:count]:
            _collect(values.get(name), found, DEPTH + 1)  # *args and **kwargs are one level more
    except Exception:  # an argument that cannot be looked into: not known to hold the value
        return False
    return not wanted.isdisjoint(found)


def _collect(value: Any, found: dict[int, torch.Tensor], depth: int) -> None:
    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            found[id(value)] = value
        return
    if depth == 0 or isinstance(value, _SCALARS) or isinstance(value, _CLOSED):
        return
    if isinstance(value, (list, tuple)):
        items: Any = value
    elif isinstance(value, dict):
        items = value.values()
    elif isinstance(getattr(value, "__dict__", None), dict):  # a dataclass, a namespace, a settings object
        items = vars(value).values()
    else:
        return
    for item in itertools.islice(items, ITEMS):
        _collect(item, found, depth - 1)
