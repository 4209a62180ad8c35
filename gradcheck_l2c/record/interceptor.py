"""The torch-function mode that sees every tensor operation of the traced code.

Most calls take the fast path: one dict lookup and the original function. Calls that can cut a
gradient path (``.item()``, ``detach``, ``.data``, ``copy_`` into a parameter, ops under
``no_grad``...) go to their handler (`handlers.py`); calls on tainted values and calls with gradients
off take the slow path into the parts of `TraceState` that record them.
"""
from __future__ import annotations

import gc
import os
import sys
from types import CodeType, FrameType, FunctionType
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from gradcheck_l2c.record.args import op_label, requires_grad_in, tensors_in
from gradcheck_l2c.record.backward_calls import on_autograd_grad, on_backward
from gradcheck_l2c.record.handlers import (NORMALISING, PASSIVE_ON_PLAIN, constant_over_one, handler_table,
                                           non_differentiable, on_data_get, on_detach, on_item, on_numpy, on_scalar,
                                           remember_site)
from gradcheck_l2c.record.locations import LIBRARY, frame_kind, user_caller_site
from gradcheck_l2c.record.saturation import CLAMPS, clamped_everywhere
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.torch_internals import is_compiling, tracing_state

Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled
_BACKWARDS = (on_backward, on_autograd_grad)
FLATTENING = NORMALISING | CLAMPS  # ops whose result may carry no gradient although it has history
_PLAIN_OPS = 4096  # ops remembered as plain at most (a library handing the mode a new callable per call stays bounded)
#: Factories that initialise weights (not constants such as ones or full): what they make is remembered while
#: it lives, so that a module holding it unregistered and unwritten is told apart from a computed constant.
INITIALISERS = frozenset((torch.zeros, torch.randn, torch.rand, torch.empty))
#: The keywords of a call made without any: handlers only read them, nothing writes to this one.
NO_KEYWORDS: dict[str, Any] = {}
_originals: dict[CodeType, FunctionType | None] = {}  # torch's backward code -> the function that runs it


def on_shown(mode: Any, func: Any, args: tuple, kwargs: dict) -> Any:
    """``print(loss)``, ``f"{loss:.3f}"``: a value shown is read, a logged number (`dropped_terms`)."""
    return func(*args, **kwargs)


#: Handlers of calls that read a tensor's values: a scalar read so is no dropped loss term.
_READS = frozenset((on_item, on_scalar, on_numpy, on_detach, on_data_get, on_shown))


def replaced_backward(func: Any, caller: FrameType) -> Any:
    """torch's own backward when ``func`` is a script's replacement of ``Tensor.backward`` or
    ``torch.autograd.backward`` (a loss-scaling wrapper) and torch's backward (``caller``) asked the mode
    to handle it; else None.

    torch's backward asks the mode to handle ``Tensor.backward`` as it is named *now*: the wrapper that
    called it. Running that wrapper again would run the script's code twice; the code that asked is what
    must run, with the arguments it passed."""
    code = caller.f_code
    if code is func.__code__ or code.co_name != "backward" or frame_kind(code.co_filename) != LIBRARY:
        return None
    if code not in _originals:  # the function object that runs this code: found once, it is still alive
        _originals[code] = next((holder for holder in gc.get_referrers(code)
                                 if type(holder) is FunctionType and holder.__code__ is code), None)
    return _originals[code]


class Interceptor(TorchFunctionMode):
    """Routes interesting torch calls to handlers; everything else runs untouched."""

    def __init__(self, state: TraceState) -> None:
        super().__init__()
        self.state = state
        self.scope, self.writes, self.cuts = state.scope, state.writes, state.cuts
        # func -> handlers.on_*; and torch's backward as named when the trace starts, which the stand-in for
        # Tensor.backward (`wrappers.tensor_backward`) hands over under no name the mode could look up
        self.handlers: dict[Any, Callable[..., Any]] = {**handler_table(), Tensor.backward: on_backward,
                                                        Tensor.__format__: on_shown, Tensor.__repr__: on_shown}
        self.user_leaves = state.registry.user_leaves
        self.terms = state.terms
        self.dropped = state.terms.dropped  # scalars with history while they live: loss terms dropped unused?
        self.taints = state.taints
        self.left_for_numpy = state.cuts.numpy_exits.exits  # values that left for NumPy may come back as a loss term
        self.origins = state.origins
        self.unregistered = state.unregistered  # plain tensors fresh from a factory, and how modules use them
        self.health = state.health  # --nan: checks every result and gradient (None when off: no cost)
        self.grad_stats = state.grad_stats  # --grad-stats: gradient norms after each backward (None when off)
        self.noted = 0  # calls that took more than the fast path (`bypass.ModuleBypass` learns from it)
        # What makes an op's result worth a look, each empty nearly always: one test of them all on the fast path
        self.carrying = (state.writes.snapshots, state.taints.by_id, state.taints.numbers, self.left_for_numpy,
                         state.unregistered.held, state.terms.unplaced)
        self.plain = state.health is None and not state.scope.record_sites  # no check of every result, no drawing
        # ops seen to have no handler, whose results may take the fast path (C functions and methods: a Python
        # function is looked at each time, as it may be named ``Tensor.backward`` now)
        self.plain_ops: set[Any] = set()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:  # torch hands None for a call without keywords: a shared empty dict, not a new one
            kwargs = NO_KEYWORDS
        scope = self.scope
        # torch's own optimizer code runs (nothing to see), or dynamo is tracing a compiled region (see README,
        # torch.compile), or ``torch.jit.trace`` is, which would record the tool's own ops and names too: step aside
        if scope.quiet or is_compiling() or tracing_state() is not None:
            return func(*args, **kwargs) if kwargs else func(*args)
        plain = func in self.plain_ops
        if not plain:
            handler = self.handlers.get(func)
            if type(func) is FunctionType and (func is Tensor.backward or func is torch.autograd.backward):
                # looked up by what they are named now, not in the table, built once per process (a script's wrapper
                # may have stood in for either then)
                handler, func = on_backward, replaced_backward(func, sys._getframe(2)) or func
            elif handler is None and self.plain and func not in FLATTENING:
                plain = True
                if type(func) is not FunctionType and len(self.plain_ops) < _PLAIN_OPS:
                    self.plain_ops.add(func)
            if handler is not None:
                if handler in _READS and self.dropped.live:
                    self.dropped.read(args[0])
                if handler not in PASSIVE_ON_PLAIN or not _is_grad_enabled() or requires_grad_in(args, kwargs):
                    self.noted += 1
                try:
                    out = handler(self, func, args, kwargs)
                    if self.health is not None:
                        self.health.handled(handler in _BACKWARDS, func, args, kwargs, out)
                    if self.grad_stats is not None and handler is on_backward:
                        self.grad_stats.after_backward(args)
                    return out
                except RuntimeError as error:
                    if handler not in _BACKWARDS:  # those were recorded as refused backwards
                        self.state.op_failed(error, func, args, kwargs)
                    raise
        try:
            out = func(*args, **kwargs) if kwargs else func(*args)  # `**{}` would build a dict at every call
        except RuntimeError as error:
            self.state.op_failed(error, func, args, kwargs)
            raise
        if kwargs and type(kwargs.get("out")) is Tensor and not _is_grad_enabled():  # normalize(..., out=u)
            self.writes.wrote_out(kwargs["out"], op_label(func))
        # the common op: nothing carried, nothing to remember about it but, from a factory asked for
        # ``requires_grad=True``, a new leaf to watch
        if plain and not any(self.carrying) and not self.origins.recording:
            if not _is_grad_enabled():
                if not requires_grad_in(args, kwargs) and not (kwargs and kwargs.get("requires_grad") is True):
                    return out  # gradients off, no input needs one, and no leaf asked to: nothing is cut
            elif type(out) is not Tensor:
                if not kwargs and not isinstance(out, tuple):  # a size, a count, a flag
                    return out
            elif out.requires_grad:
                if out.ndim == 0:
                    self.dropped.made(out)
                user_leaves = self.user_leaves
                if not (user_leaves and args and id(args[0]) in user_leaves):
                    if not kwargs:
                        return out
                    if kwargs.get("inplace") is not True:  # the only other keyword the full path looks at
                        if kwargs.get("requires_grad") is True and out.is_leaf:
                            self._watch_made_leaf(out, args)
                        return out
            # a result without history (a batch indexed out of the data, a mask), not a weight's initialiser: only an
            # integer or bool result of inputs that require grad is a cut
            elif (func not in INITIALISERS and (not kwargs or kwargs.get("inplace") is not True
                                                and kwargs.get("requires_grad") is not True)
                  and (out.is_floating_point() or not requires_grad_in(args, kwargs))):
                return out
        if self.health is not None:
            self.health.forward(func, args, kwargs, out)
        if self.writes.snapshots:
            self.writes.check_snapshots(func, args)
        taints = self.taints
        if not _is_grad_enabled():  # an op on inputs that need no gradient records nothing here
            if kwargs and kwargs.get("requires_grad") is True and type(out) is Tensor and out.requires_grad:
                self._watch_made_leaf(out, args)  # a leaf asked for under no_grad: what uses it there is cut
            if requires_grad_in(args, kwargs):
                self.noted += 1
                if self.dropped.live:  # a metric computed under no_grad (losses stacked to log) reads them
                    for tensor in tensors_in(args, kwargs):
                        self.dropped.read(tensor)
                if scope.pid == os.getpid():
                    self.cuts.no_grad_op(func, args, kwargs, out)
            elif taints.by_id or taints.numbers:
                self.noted += 1
                taints.propagate(args, kwargs, out)
            if self.origins.recording:
                self.noted += 1
                self.origins.made_without_grad(out)
            return out
        if taints.by_id or taints.numbers or self.left_for_numpy:
            taints.propagate(args, kwargs, out)
            self.terms.added(func, args, out)
        if kwargs and kwargs.get("inplace") is True and args and out is args[0]:  # F.relu(x, inplace=True): what
            self.noted += 1  # ReLU(inplace=True) runs; autograd refuses it on some inputs: such layers stay seen
            if self.origins.recording and kwargs.get("training") is not False:  # placed in the first iteration
                self.writes.layer_wrote(out, func, sys._getframe(1))
        if type(out) is Tensor:
            if out.requires_grad:
                if out.ndim == 0:  # remembered once (`DroppedTerms.made`)
                    self.dropped.made(out)
                if func in NORMALISING and constant_over_one(self, func, args, kwargs, out):
                    self.noted += 1  # a softmax over one element is a constant
                elif func in CLAMPS and clamped_everywhere(self, func, args, kwargs):
                    self.noted += 1  # a clamp beyond every value passes no gradient
                if self.unregistered.held:  # plain tensors fresh from a factory on modules: used as weights?
                    self.unregistered.used(args, sys._getframe(1))
                user_leaves = self.user_leaves
                if scope.record_sites or (user_leaves and args and id(args[0]) in user_leaves):
                    # drawing, or an op on a user's leaf (`w = normalize(w)`): remember the line that made it
                    self.noted += 1
                    if out.grad_fn is not None:
                        remember_site(out, scope.module_path)
                if self.origins.recording:
                    self.origins.made(out)  # the first iteration: the line, for autograd's errors
                if self.terms.unplaced and out.numel() == 1:
                    self.terms.scalar_made(out)  # a penalty's gradients wait for a loss: where losses are made
            # integer and bool results (argmax, comparisons, casts) of inputs with history are cuts;
            # float results without grad are fresh tensors (zeros_like) or had no history anyway
            elif not out.is_floating_point():
                if requires_grad_in(args, kwargs):
                    self.noted += 1
                    non_differentiable(self, func, args, kwargs, [out])
            elif func in INITIALISERS:  # weights that may be meant to learn (UnregisteredLog.made)
                self.noted += 1
                self.unregistered.made(out, f"torch.{func.__name__}")
            elif self.unregistered.held:
                self.unregistered.derived(args, out)
            if kwargs and kwargs.get("requires_grad") is True and out.is_leaf:
                self._watch_made_leaf(out, args)
        elif isinstance(out, tuple) and out and isinstance(out[0], Tensor):
            dead = [o for o in out if isinstance(o, Tensor) and not o.requires_grad]
            if dead and len(dead) < len(out):
                self.noted += 1
                non_differentiable(self, func, args, kwargs, dead)
            if self.origins.recording and len(dead) < len(out):
                self.origins.made(out)
        return out

    def _watch_made_leaf(self, leaf: Tensor, args: tuple) -> None:
        """A factory called with ``requires_grad=True`` made ``leaf``: watch it as a user's leaf when user code
        called it (the caller of `__torch_function__`), noting one shaped like a value with history
        (``zeros_like(logits, requires_grad=True)``: a canvas to scatter into, not a weight)."""
        site = user_caller_site(2)
        if site is not None:
            like = bool(args) and type(args[0]) is Tensor and args[0].grad_fn is not None
            self.state.registry.watch_leaf(leaf, site, user_leaf=True, made=not like)
