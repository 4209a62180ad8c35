"""Constructors torch-function modes do not see (``torch.from_numpy``, the legacy ``torch.Tensor(...)`` and
``Variable(...)``): values that come back in through them arrive without their history, a cut told at the user's
line (`cuts.CutRecorder.rewrap`)."""
from __future__ import annotations

from typing import Any, Callable

import torch

from gradcheck_l2c.record.args import data_items
from gradcheck_l2c.record.locations import user_site
from gradcheck_l2c.record.state import TraceState


def from_numpy(state: TraceState, original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.from_numpy``: tainted values come back in without history."""

    def from_numpy(array: Any) -> torch.Tensor:
        tensor = original(array)
        if (state.taints or state.cuts.numpy_exits) and state.scope.in_trace_thread():
            state.cuts.rewrap("torch.from_numpy()", array, tensor, user_site(1), False)
        return tensor

    return from_numpy


def tensor_new(state: TraceState, original: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.Tensor(data)``: numbers from a cut (``torch.Tensor([loss.item() for ...])``), or tensors with history
    (``torch.Tensor([[cos, -sin], [sin, cos]])``, whose items it converts with ``float()``, a conversion of the
    constructor's, not the script's), come back in without history. Subclasses construct as before."""

    def __new__(*args: Any, **kwargs: Any) -> Any:  # (cls, *args): the signature dynamo's polyfill accepts
        scope = state.scope
        scope.constructing += 1
        try:
            out = original(*args, **kwargs)
        finally:
            scope.constructing -= 1
        taints = state.taints
        if args[0] is torch.Tensor and len(args) > 1 and scope.in_trace_thread() and (
                taints.by_id or taints.numbers or state.cuts.numpy_exits or _with_history(args[1])):
            state.cuts.rewrap("torch.Tensor()", args[1], out, user_site(1), False)
        return out

    return __new__


def variable(state: TraceState, original: type) -> type:
    """A stand-in for the legacy ``Variable`` class: still matches ``isinstance``, and reports."""

    class Variable(original):  # type: ignore[misc, valid-type]
        def __new__(cls, data: Any = None, *args: Any, requires_grad: bool = False, **kwargs: Any) -> Any:
            out = original(data, *args, requires_grad=requires_grad, **kwargs)
            if state.scope.in_trace_thread():
                state.cuts.rewrap("Variable()", data, out, user_site(1), requires_grad)
            return out

    return Variable


def _with_history(data: Any) -> bool:
    """Whether ``data`` (a list of numbers or tensors) holds a tensor that requires grad."""
    return type(data) in (list, tuple) and any(isinstance(item, torch.Tensor) and item.requires_grad
                                               for item in data_items(data))
