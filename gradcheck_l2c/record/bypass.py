"""torch's own layers, and modules of straight-line code, run past the interceptor once a call was seen to record
nothing.

The first iteration is recorded whole. After it, a call of a module whose whole subtree is torch's own layers
(``torch.nn`` classes, no hooks, no user functions as attributes) or modules whose ``forward`` is straight-line code
calling only torch (`straight_code`: the same torch calls on every call) runs with the interceptor off the mode stack
when an earlier call of the same module, with inputs alike (dtype, device, dimensions, requires_grad, leaf,
view, inference) and in the same training mode, went through the interceptor without a handler firing: the same
code on alike inputs has nothing new to show. That is most of an op-bound network's tracing cost (each op
through a torch-function mode pays a Python call). Calls with gradients off are learnt apart, and only of layers whose
parameters and buffers need no gradient. Anything that could make the record differ keeps the mode on: values with a
taint alive, the tool's per-op duties (``--nan``, drawing, snapshots, penalties
waiting for a loss, plain tensors on modules), a user's leaf among the inputs. The layers under one that runs past
the mode are called straight to their ``forward`` when ``nn.Module.__call__`` would go there too (no hooks, no
compiled layer, no TorchScript trace): the tool's own wrapper then stands in for torch's two dispatch frames.
"""
from __future__ import annotations

import functools
import sys
import weakref
from collections import OrderedDict
from typing import Any, Callable

import torch
from torch import nn

from gradcheck_l2c.record.entries import entry_ref
from gradcheck_l2c.record.locations import USER, frame_kind, user_site
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.straight_code import straight_class, straight_forward
from gradcheck_l2c.record.torch_internals import (calls_go_to_forward, compiled, global_forward_hooks, hook_tables,
                                                  innermost_mode_is, is_compiling, is_view, pop_mode, push_mode,
                                                  weight_tables)

_is_grad_enabled = torch.is_grad_enabled
#: How many input signatures one module keeps as seen clean (a model fed many shapes keeps the mode for the rest).
SIGNATURES_PER_MODULE = 16
#: How the layers under one that runs past the mode are called: through ``nn.Module.__call__``, or (no hook, no
#: compiled layer, no TorchScript trace: what ``__call__`` would find) straight to their ``forward``.
THROUGH_CALL, STRAIGHT = 1, 2
#: Torch's layers whose calls run user code or another process's: never passed.
_NEVER = ("torch.nn.parallel", "torch.nn.utils.parametrize")
_own_layer: dict[type, bool] = {}


def own_layer(cls: type) -> bool:
    """Whether ``cls`` is one of torch's own layers (defined in ``torch.nn``)."""
    known = _own_layer.get(cls)
    if known is None:
        name = getattr(cls, "__module__", "") or ""
        known = _own_layer[cls] = name.startswith("torch.nn.") and not name.startswith(_NEVER)
    return known


#: Attribute values that are never callable (a module's own flags, hyper-parameters and tables): no look needed.
_DATA = frozenset((bool, int, float, str, type(None), dict, OrderedDict, set, list, tuple))


def _user_callable(value: Any) -> bool:
    """Whether ``value`` is a function, method, ``partial`` or callable object of user code."""
    if type(value) in _DATA:
        return False
    if isinstance(value, functools.partial):
        return _user_callable(value.func)
    code = getattr(value, "__code__", None)
    if code is not None:
        return frame_kind(code.co_filename) == USER
    if callable(value) and not isinstance(value, (type, nn.Module, torch.Tensor)):
        file = getattr(sys.modules.get(type(value).__module__), "__file__", None)
        return file is not None and frame_kind(file) == USER
    return False


def _runs_user_code(module: nn.Module) -> bool:
    """An instance ``forward`` or a user function kept as an attribute (``activation=my_gelu``)."""
    return "forward" in module.__dict__ or any(_user_callable(value) for value in module.__dict__.values())


def passable_code(module: nn.Module) -> bool:
    """Whether a call of ``module`` does, with autograd, only what its inputs and layers decide: one of torch's
    own layers without user functions of its own, or a module whose ``forward`` is straight-line code calling
    only torch (`straight_code`)."""
    if _runs_user_code(module):
        return False
    cls = type(module)
    return own_layer(cls) or (not cls.__module__.startswith(_NEVER) and straight_forward(module))


def layers_under(module: nn.Module) -> list[nn.Module] | None:
    """The modules under ``module``, when it and all of them run code a call of which may be learnt
    (`passable_code`; hooks aside: they come and go, and are looked at per call); else None."""
    if not passable_code(module):
        return None
    found: list[nn.Module] = []
    for child in module.children():
        below = layers_under(child)
        if below is None:
            return None
        found.append(child)
        found.extend(below)
    return found


_UNDESCRIBED = object()  # an input `signature` does not describe: the call goes through the mode


def signature(args: tuple, kwargs: dict, user_leaves: dict, training: bool, grad: bool) -> tuple | None:
    """What of a call's inputs decides what a torch layer's code does with autograd (and the training and grad
    modes it runs in); None when a user's leaf is among them (its ops are remembered one by one) or an input is of a
    kind not described here."""
    parts: list[Any] = [training, grad]
    for value in args:
        part = _described(value, user_leaves)
        if part is _UNDESCRIBED:
            return None
        parts.append(part)
    for name, value in kwargs.items():
        part = _described(value, user_leaves)
        if part is _UNDESCRIBED:
            return None
        parts.append((name, part))
    return tuple(parts)


def _described(value: Any, user_leaves: dict) -> Any:
    """One input as `signature` keeps it: a plain tensor's autograd-relevant traits, a plain scalar's value."""
    if isinstance(value, torch.Tensor):
        if type(value) is not torch.Tensor or id(value) in user_leaves:
            return _UNDESCRIBED
        return (value.dtype, value.device, value.dim(), value.requires_grad, value.is_leaf, is_view(value),
                value.is_inference())
    if value is None or type(value) in (bool, int, float, str):
        return value
    return _UNDESCRIBED


class ModuleBypass:
    """Decides, per module call, whether a torch layer or a straight-line module runs past the interceptor; learns
    from the calls that go through it."""

    def __init__(self, state: TraceState, mode: Any) -> None:
        self.state, self.mode = state, mode
        self._clean: dict[int, tuple[weakref.ref, set[tuple]]] = {}  # module id -> input signatures seen clean
        # modules a call of which fired a handler, with gradients on and off: always through the mode in that grad mode
        self._dirty: dict[int, weakref.ref] = {}
        self._dirty_without_grad: dict[int, weakref.ref] = {}
        # module id -> (its reference, the hook tables of it and of the layers under it, None when not all of them
        # may pass; whether none of them is compiled; their parameter and buffer tables): a table is replaced, and a
        # layer compiled, only by an attribute assignment, which forgets this
        self._layers: dict[int, tuple[weakref.ref, tuple[dict, ...] | None, bool, tuple[dict, ...]]] = {}
        # 0, or how the calls under the torch layer that runs past the mode now are made (they need no look)
        self.passing = 0

    def changed(self) -> None:
        """A torch layer or a straight-line module got an attribute, or a module a submodule: what was learnt may no
        longer hold."""
        self._layers.clear()
        self._clean.clear()

    def attribute_set(self, module: nn.Module, name: str) -> None:
        """``Module.__setattr__`` ran: a torch layer's attribute (``inplace``, ``activation``), or a layer of a
        straight-line module, changes its calls (``training``, which ``model.train()`` sets on every layer, is part
        of what a call is learnt by)."""
        if name != "training" and (own_layer(type(module)) or straight_class(type(module))):
            self.changed()

    def may_pass(self, module: nn.Module) -> bool:
        """Whether ``module`` and all under it run code whose calls may be learnt (`passable_code`), without hooks."""
        ident = id(module)
        entry = self._layers.get(ident)
        if entry is None:
            below = layers_under(module)
            tables = None if below is None else tuple(
                table for layer in (module, *below) for table in hook_tables(layer))
            uncompiled = below is not None and not any(map(compiled, (module, *below)))
            weights = () if below is None else tuple(
                table for layer in (module, *below) for table in weight_tables(layer))
            entry = self._layers[ident] = (entry_ref(module, self._layers, ident), tables, uncompiled, weights)
        tables = entry[1]
        return tables is not None and not any(tables)

    def straight(self, module: nn.Module) -> bool:
        """Whether the layers of ``module`` (found by `may_pass`, without hooks) may be called straight to their
        ``forward`` now: none is compiled, and ``nn.Module.__call__`` would go straight there too."""
        return self._layers[id(module)][2] and calls_go_to_forward()

    def weights_require_grad(self, module: nn.Module) -> bool:
        """Whether a parameter or buffer of ``module`` or of the layers under it (found by `may_pass`) requires grad:
        with gradients off, its ops would cut it (`cuts.CutRecorder.no_grad_op`)."""
        return any(tensor is not None and tensor.requires_grad
                   for table in self._layers[id(module)][3] for tensor in table.values())

    def passable(self) -> bool:
        """Nothing in the trace's state asks to see every op now (no taint alive, the first iteration over, no per-op
        duty)."""
        state = self.state
        return (not state.origins.recording and not state.taints.by_id and not state.taints.numbers
                and not state.terms.unplaced and not state.unregistered.held and not state.writes.snapshots
                and not global_forward_hooks())

    def wrap(self, call: Callable[..., Any]) -> Callable[..., Any]:
        """``nn.Module.__call__`` that runs past the interceptor when it may, and learns when it may not; it notes
        where user code first called each module (the judge names a layer that ran but never learnt there)."""
        bypass, mode, clean = self, self.mode, self._clean
        dirty, dirty_without_grad = self._dirty, self._dirty_without_grad
        scope, user_leaves, called = self.state.scope, self.state.registry.user_leaves, self.state.registry.called
        origins, called_again = self.state.origins, self.state.registry.called_again

        def calling_module(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
            passing = bypass.passing
            if passing:  # a layer under one that runs past the mode: done at once
                return self.forward(*args, **kwargs) if passing == STRAIGHT else call(self, *args, **kwargs)
            ident, grad = id(self), _is_grad_enabled()
            if ident not in called and scope.in_trace_thread():  # its first call: the user line that made it
                called[ident] = (entry_ref(self, called, ident), user_site(1))
            elif origins.recording and ident not in called_again and scope.in_trace_thread():
                site = user_site(1)
                if site != called[ident][1]:
                    called_again[ident] = (entry_ref(self, called_again, ident), site)
            if (not innermost_mode_is(mode) or is_compiling() or ident in (dirty if grad else dirty_without_grad)
                    or scope.quiet or not bypass.may_pass(self)):
                return call(self, *args, **kwargs)
            pop_mode()  # from here on, past the interceptor: reading the inputs is the tool's, not the script's
            try:
                # with gradients off, only layers whose weights need no gradient (an evaluation of weights given to
                # functional_call, a frozen network): the others' calls are cuts of those weights
                key = None if not grad and bypass.weights_require_grad(self) else signature(
                    args, kwargs, user_leaves, self.training, grad)
                entry = clean.get(ident)
                if key is not None and entry is not None and key in entry[1] and bypass.passable():
                    passing = bypass.passing = STRAIGHT if bypass.straight(self) else THROUGH_CALL
                    try:
                        return self.forward(*args, **kwargs) if passing == STRAIGHT else call(self, *args, **kwargs)
                    finally:
                        bypass.passing = 0
            finally:
                push_mode(mode)
            if key is None:
                return call(self, *args, **kwargs)
            before = mode.noted
            out = call(self, *args, **kwargs)
            bypass.learn(self, key, fired=mode.noted != before, grad=grad)
            return out

        return calling_module

    def learn(self, module: nn.Module, key: tuple, fired: bool, grad: bool) -> None:
        """A call of ``module`` on inputs ``key`` went through the interceptor with gradients on or off (``grad``);
        ``fired``: a handler acted."""
        ident = id(module)
        if fired:
            self._clean.pop(ident, None)
            dirty = self._dirty if grad else self._dirty_without_grad
            dirty[ident] = entry_ref(module, dirty, ident)
            return
        entry = self._clean.get(ident)
        if entry is None:
            entry = self._clean[ident] = (entry_ref(module, self._clean, ident), set())
        if len(entry[1]) < SIGNATURES_PER_MODULE:
            entry[1].add(key)
