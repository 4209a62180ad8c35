"""The handlers of ``backward()`` and ``torch.autograd.grad`` calls: what each reached, gradients taken for a
penalty, and autograd's refusals, recorded before the error propagates unchanged."""
from __future__ import annotations

import sys
from typing import Any

import torch

from gradcheck_l2c.record.events import LEAF_BACKWARD
from gradcheck_l2c.record.locations import DIFFERENTIATORS, called_from, user_site
from gradcheck_l2c.record.stacks import user_stack_sites
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.torch_internals import run_backward

Tensor = torch.Tensor


def on_backward(mode: Any, func, args, kwargs):
    roots = _backward_roots(func, args, kwargs)
    inputs = kwargs.get("inputs")
    state = mode.state
    site, path = user_stack_sites(1)  # read before the engine's work evicts the interpreter's caches
    state.origins.called_from = site, path  # the same walk tells the engine's stand-in where it is called
    for root in roots:
        if root.grad_fn is None and root.requires_grad:  # ``param.backward(g)``: no graph behind it, only .grad set
            key = state.registry.key_of(root)
            if key is not None:
                state.events.record("unused_parameter", key, site, LEAF_BACKWARD)
    if mode.left_for_numpy:
        mode.cuts.numpy_exits.backward_starts()
    try:
        out = _explained(state, func, args, kwargs, roots)
    finally:
        state.origins.called_from = None
    keys = None
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        keys = {k for k in map(state.registry.key_of, inputs) if k is not None}
    state.backwards.ended(roots, keys, sys._getframe(1), site)
    progress(mode)
    return out


def on_autograd_grad(mode: Any, func, args, kwargs):
    outputs = args[0] if args else kwargs["outputs"]
    inputs = args[1] if len(args) > 1 else kwargs["inputs"]
    roots = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    state = mode.state
    key_of = state.registry.key_of
    keys = {k for k in map(key_of, inputs) if k is not None}
    mode.cuts.numpy_exits.backward_starts()
    cut = None
    if not kwargs.get("create_graph") and len(args) < 5 and not called_from(DIFFERENTIATORS, 1):
        # without create_graph the gradients are constants: what they were computed from is cut here
        cut = mode.cuts.cut("grad_no_graph", "autograd.grad()", [r for r in roots if isinstance(r, Tensor) and r.requires_grad],
                            site=user_site(1))
    grads = _explained(state, func, args, kwargs, roots)
    if cut is not None:
        for grad in grads:
            state.taints.mark(grad, cut)
    returned = {key for key, grad in zip(map(key_of, inputs), grads) if key is not None and grad is not None}
    state.backwards.ended(roots, keys, sys._getframe(1), user_site(1), returned,
                          derived=bool(kwargs.get("create_graph")))
    if kwargs.get("create_graph") and not called_from(DIFFERENTIATORS, 1):
        state.terms.took_gradients(grads, roots)
    progress(mode)
    return grads


def progress(mode: Any) -> None:
    """A backward ended: the trace's progress listener, if any, hears of it (it counts what it shows only when
    someone listens: that count grows with the tensors missing a gradient)."""
    callback = getattr(mode, "on_progress", None)
    if callback is not None:
        callback()


def _explained(state: TraceState, func, args, kwargs, roots: list[Tensor]) -> Any:
    """Run a backward (`run_backward`); if PyTorch refuses, add what the trace knows to its error and re-raise it."""
    try:
        return run_backward(func, args, kwargs)
    except (RuntimeError, NotImplementedError) as error:  # a custom Function without backward: NotImplementedError
        inputs = (args[1] if len(args) > 1 else kwargs.get("inputs")) if func is torch.autograd.grad \
            else kwargs.get("inputs")
        state.backward_failed(error, roots, user_site(2), inputs)
        raise


def _backward_roots(func, args, kwargs) -> list[Tensor]:
    first = args[0] if args else kwargs.get("tensors", kwargs.get("self"))
    if isinstance(first, Tensor):
        return [first]
    return [t for t in first if isinstance(t, Tensor)]
