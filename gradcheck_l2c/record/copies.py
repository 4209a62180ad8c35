"""``copy_`` and ``set_``: values written into a parameter's memory, where autograd does not link them to the
parameter. Under ``no_grad`` into the parameter itself (``load_state_dict``, an averaging step); with gradients on,
``copy_`` into another tensor that shares the parameter's memory (one of the detached tensors ``state_dict()``
returns): the copy records its history on that alias, and the parameter the model computes with stays a leaf without
it. And ``load_state_dict`` given the module's own state (``target.load_state_dict(target.state_dict())``, meant to
sync a target network from another): every tensor is copied onto itself, and nothing changes."""
from __future__ import annotations

import functools
from typing import Any, Callable

import torch
from torch import nn

from gradcheck_l2c.record.args import op_label
from gradcheck_l2c.record.events import INTO_ALIAS, ONTO_ITSELF
from gradcheck_l2c.record.locations import library_callers, user_site
from gradcheck_l2c.record.torch_internals import STATE_DICT_LOAD, functions_off
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
    mode.writes.wrote(target, user_site(1), op_label(func))  # an in-place write: it may make a saved tensor stale
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


def state_loading(state: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    """``Module.load_state_dict`` that notes a load of the module's own state: each of its watched parameters gets a
    ``no_update`` event at the user's line (nothing it loads is new)."""

    @functools.wraps(original)
    def load_state_dict(module: nn.Module, state_dict: Any, *args: Any, **kwargs: Any) -> Any:
        if state.scope.in_trace_thread():
            try:
                with functions_off():  # the tool's reads of the tensors, past the interceptor
                    own = _own_state(module, state_dict)
            except (RuntimeError, TypeError, NotImplementedError):  # tensors without memory of their own (meta, a
                own = []  # tensor subclass's): not this
            if own:
                site = user_site(1)
                for parameter in own:
                    key = state.registry.key_of(parameter)
                    if key is not None:
                        state.events.record("no_update", key, site, ONTO_ITSELF)
        return original(module, state_dict, *args, **kwargs)

    return load_state_dict


def _own_state(module: nn.Module, state_dict: Any) -> list[Tensor]:
    """The module's parameters, when every tensor ``state_dict`` holds is one of the module's own (the memory its
    parameters and buffers use): loading it changes nothing. Else an empty list. Tensors without memory (empty, on the
    meta device: address 0) tell nothing."""
    if not hasattr(state_dict, "values"):
        return []
    parameters = list(module.parameters())
    own = {tensor.data_ptr(): tensor for tensor in (*parameters, *module.buffers()) if tensor.data_ptr()}
    values = [value for value in state_dict.values() if isinstance(value, Tensor) and value.data_ptr()]
    loaded = [own.get(value.data_ptr()) for value in values]
    if not values or any(tensor is None or tensor.shape != value.shape for tensor, value in zip(loaded, values)):
        return []
    return parameters
