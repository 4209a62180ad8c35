"""``copy_`` and ``set_``: values written into a parameter's memory, where autograd does not link them to the
parameter. Under ``no_grad`` into the parameter itself (``load_state_dict``, an averaging step); with gradients on,
``copy_`` into another tensor that shares the parameter's memory (one of the detached tensors ``state_dict()``
returns): the copy records its history on that alias, and the parameter the model computes with stays a leaf without
it."""
from __future__ import annotations

import functools
from typing import Any

import torch

from gradcheck_l2c.record.events import INTO_ALIAS
from gradcheck_l2c.record.locations import library_callers
from gradcheck_l2c.record.torch_internals import STATE_DICT_LOAD
from gradcheck_l2c.record.watch import WatchRegistry

Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled


def on_copy(mode: Any, func, args, kwargs):
    target = args[0]
    state = mode.state
    if target.requires_grad and target.is_leaf and not _is_grad_enabled():
        sources = _sources(args, kwargs)
        if mode.writes.snapshots:
            mode.writes.check_snapshots(func, tuple(sources))
        out = func(*args, **kwargs)
        # the stack walks (whether load_state_dict copies, the user's line) only if a cut is recorded
        mode.cuts.reenter("state_dict_reload", functools.partial(_copy_label, func), sources, [target])
        state.reloaded(target)
        return out
    free = not target.requires_grad
    out = func(*args, **kwargs)
    if not _is_grad_enabled():
        mode.cuts.no_grad_op(func, args, kwargs, out)
        return out
    if state.taints:
        state.taints.mark(out, state.taints.of_args(args, kwargs))
    if free and target.requires_grad and func is Tensor.copy_:  # history written into a tensor without: whose memory?
        parameter = aliased_parameter(state.registry, target)
        if parameter is not None:
            mode.cuts.reenter("state_dict_reload", INTO_ALIAS, _sources(args, kwargs),
                              [parameter])
    return out


def aliased_parameter(registry: WatchRegistry, tensor: Tensor) -> Tensor | None:
    """The watched leaf that requires grad and shares ``tensor``'s memory, other than ``tensor`` itself, if any."""
    memory = tensor.untyped_storage().data_ptr()
    for watched in list(registry.by_id.values()):
        other = watched.tensor
        if other is not None and other is not tensor and other.requires_grad and other.is_leaf \
                and other.untyped_storage().data_ptr() == memory:
            return other
    return None


def _sources(args: tuple, kwargs: dict) -> list[Any]:
    sources = list(args[1:2])
    if kwargs:
        sources += [v for v in kwargs.values() if isinstance(v, Tensor)]
    return sources


def _copy_label(func: Any) -> str:
    """How a ``copy_`` into a parameter under ``no_grad`` is named: ``load_state_dict()`` when it made it."""
    return "load_state_dict()" if STATE_DICT_LOAD in library_callers(1) else f".{func.__name__}()"
