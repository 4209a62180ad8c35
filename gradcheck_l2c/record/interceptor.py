"""The torch-function mode that sees every tensor operation of the traced code.

Most calls take the fast path: one dict lookup and the original function. Calls that can cut a
gradient path (``.item()``, ``detach``, ``.data``, ``copy_`` into a parameter, ops under
``no_grad``...) and calls on tainted values take the slow path into `TraceState`.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable

import torch
from torch.overrides import TorchFunctionMode

from gradcheck_l2c.record.locations import (
    DIFFERENTIATORS,
    called_from,
    caller_is_user,
    library_callers,
    user_site,
)
from gradcheck_l2c.record.state import TraceState, op_label, tensors_in

Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled

#: Ops whose derivative is zero almost everywhere: a path through them carries no gradient.
ZERO_DERIVATIVE = ("round", "floor", "ceil", "sign", "trunc", "fix", "sgn", "heaviside")
_CONVERSIONS = {"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "type", "type_as"}


class Interceptor(TorchFunctionMode):
    """Routes interesting torch calls to handlers; everything else runs untouched."""

    def __init__(self, state: TraceState) -> None:
        super().__init__()
        self.state = state
        self.handlers: dict[Any, Callable[..., Any]] = _handler_table()  # func -> Interceptor.on_*
        self.user_leaves = state.registry.user_leaves

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if self.state.quiet:
            return func(*args, **kwargs)
        handler = self.handlers.get(func)
        if handler is not None:
            return handler(self, func, args, kwargs)
        out = func(*args, **kwargs)
        state = self.state
        if state.snapshots:
            state.check_snapshots(func, args)
        taints = state.taints
        if not _is_grad_enabled():
            if _requires_grad_in(args, kwargs) and state.pid == os.getpid():
                state.no_grad_op(func, args, kwargs, out)
            elif taints.by_id or taints.numbers:
                taints.propagate(args, kwargs, out)
            return out
        if taints.by_id or taints.numbers:
            taints.propagate(args, kwargs, out)
        if type(out) is Tensor:
            if not out.requires_grad:
                # integer and bool results (argmax, comparisons, casts) of inputs with history are cuts;
                # float results without grad are fresh tensors (zeros_like) or had no history anyway
                if not out.is_floating_point() and _requires_grad_in(args, kwargs):
                    self.non_differentiable(func, args, kwargs, [out])
            elif state.record_sites or (self.user_leaves and args and id(args[0]) in self.user_leaves):
                # drawing, or an op on a user's leaf (`w = normalize(w)`): remember the line that made it
                if out.grad_fn is not None:
                    _remember_site(out, state.module_path)
            if kwargs and kwargs.get("requires_grad") is True and out.is_leaf and caller_is_user(1):
                state.watch_leaf(out, user_site(1), user_leaf=True)
        elif isinstance(out, tuple) and out and isinstance(out[0], Tensor):
            dead = [o for o in out if isinstance(o, Tensor) and not o.requires_grad]
            if dead and len(dead) < len(out):
                self.non_differentiable(func, args, kwargs, dead)
        return out

    # ---- generic rules -------------------------------------------------------------------

    def non_differentiable(self, func, args, kwargs, dead: list[Tensor]) -> None:
        """An op in grad mode turned inputs with history into outputs without any."""
        inputs = [a for a in tensors_in(args, kwargs) if a.requires_grad]
        if not inputs:
            return
        state = self.state
        output = "bool" if all(d.dtype == torch.bool for d in dead) else "integer"  # a mask, or indices/a cast
        taint = state.cut("non_differentiable", op_label(func), inputs, site=user_site(2), output=output)
        if taint is not None:
            taint = state.taints.merge(taint, state.taints.of_args(args, kwargs))
            for out in dead:
                state.taints.set(out, taint)

    # ---- handlers ------------------------------------------------------------------------

    def on_item(self, func, args, kwargs):
        out = func(*args, **kwargs)
        tensor = args[0]
        state = self.state
        if tensor.requires_grad or state.taints:
            taint = state.cut("item", ".item()", [tensor], site=user_site(1))
            if taint is not None and type(out) is float:
                return state.taints.tainted_float(out, taint)
        return out

    def on_scalar(self, func, args, kwargs):
        tensor = args[0]
        if tensor.requires_grad:
            label = {"__float__": "float()", "__int__": "int()", "tolist": ".tolist()",
                     "__index__": "int()"}.get(func.__name__, func.__name__)
            self.state.cut("item", label, [tensor], site=user_site(1))
        return func(*args, **kwargs)

    def on_numpy(self, func, args, kwargs):
        out = func(*args, **kwargs)
        tensor = args[0]
        state = self.state
        if state.taints:
            label = ".numpy()" if func.__name__ == "numpy" else "np.asarray()"
            taint = state.relabel(state.taints.get(tensor), "numpy", label, user_site(1))
            if taint is not None:
                state.taints.set(out, taint)
        return out

    def on_rewrap(self, func, args, kwargs):
        out = func(*args, **kwargs)
        data = args[0] if args else kwargs.get("data")
        if isinstance(data, Tensor) and out is data:
            return out  # as_tensor of a tensor returns it unchanged: nothing is cut
        self.state.rewrap(f"torch.{func.__name__}()", data, out, user_site(1), kwargs.get("requires_grad") is True)
        return out

    def on_detach(self, func, args, kwargs):
        tensor = args[0]
        out = func(*args, **kwargs)
        state = self.state
        if tensor.requires_grad or state.taints:
            callers = library_callers(1)
            if _library_copy(state, tensor, callers):
                state.taints.mark(out, state.taints.get(tensor))
                return out
            in_state_dict = "_save_to_state_dict" in callers
            label = "state_dict()" if in_state_dict else f".{func.__name__}()"
            taint = state.cut("detach", label, [tensor], site=user_site(1))
            state.taints.mark(out, taint)
            if in_state_dict and tensor.is_leaf and tensor.requires_grad:
                state.snapshot(tensor, out)
        return out

    def on_data_get(self, func, args, kwargs):
        tensor = args[0]
        out = func(*args, **kwargs)
        state = self.state
        if tensor.requires_grad or state.taints:
            if _library_copy(state, tensor, library_callers(1)):
                state.taints.mark(out, state.taints.get(tensor))
                return out
            taint = state.cut("data_attr", ".data", [tensor], site=user_site(1))
            state.taints.mark(out, taint)
        return out

    def on_data_set(self, func, args, kwargs):
        target, value = args[0], args[1]
        out = func(*args, **kwargs)
        if target.requires_grad:
            self.state.reenter("data_attr", ".data = ...", [value], [target], site=user_site(1))
        return out

    def on_grad_get(self, func, args, kwargs):
        out = func(*args, **kwargs)
        if caller_is_user(2):
            self.state.grad_read(args[0], out)
        return out

    def on_copy(self, func, args, kwargs):
        target = args[0]
        sources = list(args[1:2]) + [v for v in kwargs.values() if isinstance(v, Tensor)]
        state = self.state
        if target.requires_grad and target.is_leaf and not _is_grad_enabled():
            state.check_snapshots(func, tuple(sources))
            out = func(*args, **kwargs)
            callers = library_callers(1)
            if "_load_from_state_dict" in callers:
                label = "load_state_dict()"
            else:
                label = f".{func.__name__}()"
            state.reenter("state_dict_reload", label, sources, [target], site=user_site(1))
            return out
        out = func(*args, **kwargs)
        if not _is_grad_enabled():
            state.no_grad_op(func, args, kwargs, out)
        elif state.taints:
            state.taints.mark(out, state.taints.of_args(args, kwargs))
        return out

    def on_requires_grad(self, func, args, kwargs):
        """``a.requires_grad_()`` or ``a.requires_grad = True`` in user code makes a user leaf, as
        ``requires_grad=True`` at creation."""
        out = func(*args, **kwargs)
        tensor = args[0]
        if tensor.requires_grad and tensor.is_leaf and caller_is_user(2):
            self.state.watch_leaf(tensor, user_site(1), user_leaf=True)
        return out

    def on_zero_derivative(self, func, args, kwargs):
        out = func(*args, **kwargs)
        state = self.state
        if _is_grad_enabled() and isinstance(out, Tensor):
            inputs = [a for a in tensors_in(args, kwargs) if a.requires_grad]
            if inputs:
                taint = state.cut("non_differentiable", op_label(func), inputs, site=user_site(1), output="step")
                state.taints.mark(out, state.taints.merge(taint, state.taints.of_args(args, kwargs)))
                return out
        if state.taints or not _is_grad_enabled():
            state.taints.mark(out, state.taints.of_args(args, kwargs))
        return out

    def on_conversion(self, func, args, kwargs):
        out = func(*args, **kwargs)
        tensor = args[0]
        state = self.state
        if state.taints:
            state.taints.mark(out, state.taints.of_args(args, kwargs))
        if isinstance(out, Tensor) and out is not tensor and out.grad_fn is not None \
                and tensor.is_leaf and tensor.requires_grad:
            _remember_site(out)
        elif not _is_grad_enabled() and state.pid == os.getpid():
            state.no_grad_op(func, args, kwargs, out)
        return out

    def on_inplace(self, func, args, kwargs):
        state = self.state
        target = args[0] if args else None
        if not _is_grad_enabled():
            if state.snapshots:
                state.check_snapshots(func, args)
            out = func(*args, **kwargs)
            if (state.taints or _any_requires_grad(args, 1) or _any_requires_grad(kwargs.values(), 0)) \
                    and state.pid == os.getpid():
                state.no_grad_op(func, args, kwargs, out)
            return out
        if state.snapshots:
            state.check_snapshots(func, args)
        out = func(*args, **kwargs)
        if isinstance(target, Tensor):
            site, label = user_site(1), op_label(func)
            state.inplace_log.append((site, label, tuple(target.shape), target.dtype, target._version))
            if target.requires_grad:
                state.inplace_write(target, site, label)
            if state.taints:
                merged = state.taints.of_args(args, kwargs)
                if merged is not None:
                    state.taints.set(target, merged)
        return out

    def on_backward(self, func, args, kwargs):
        roots = _backward_roots(func, args, kwargs)
        inputs = kwargs.get("inputs")
        state = self.state
        out = _explained(state, func, args, kwargs, roots)
        keys = None
        if inputs is not None:
            inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
            keys = {k for k in map(state.registry.key_of, inputs) if k is not None}
        state.judge_backward(roots, keys, sys._getframe(1))
        self.progress()
        return out

    def on_autograd_grad(self, func, args, kwargs):
        outputs = args[0] if args else kwargs["outputs"]
        inputs = args[1] if len(args) > 1 else kwargs["inputs"]
        roots = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        state = self.state
        grads = _explained(state, func, args, kwargs, roots)
        key_of = state.registry.key_of
        returned = {key for key, grad in zip(map(key_of, inputs), grads) if key is not None and grad is not None}
        keys = {k for k in map(key_of, inputs) if k is not None}
        state.judge_backward(roots, keys, sys._getframe(1), returned)
        self.progress()
        return grads

    def progress(self) -> None:
        callback = getattr(self, "on_progress", None)
        if callback is not None:
            state = self.state
            missing = sum(1 for key in state.missed if not state.registry.all[key].ever_grad)
            callback(state.backward_count, missing)


def _requires_grad_in(args: tuple, kwargs: dict) -> bool:
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


def _any_requires_grad(values, start: int) -> bool:
    """Whether any tensor among ``values`` (from index ``start``) requires grad."""
    for index, value in enumerate(values):
        if index >= start and isinstance(value, Tensor) and value.requires_grad:
            return True
    return False


def _remember_site(out: Tensor, modules: list[str] | None = None) -> None:
    """Store on the output's autograd node the user line (and module) that made it, for drawing."""
    metadata = out.grad_fn.metadata
    site = user_site(2)
    if site is not None:
        metadata["gradcheck_site"] = (site.file, site.line)
    if modules:
        metadata["gradcheck_module"] = modules[-1]


def _library_copy(state: TraceState, tensor: Tensor, callers: tuple[str, ...]) -> bool:
    """A detach or ``.data`` read that copies, not cuts: ``copy.deepcopy`` makes new leaves (watched
    under their own names), and differentiation APIs differentiate a detached copy of the user's leaf."""
    if "__deepcopy__" in callers:
        watched = state.registry.get(tensor)
        if watched is not None:
            watched.copied = True
        return True
    if called_from(DIFFERENTIATORS, 2):
        state.differentiated_by_library(tensor)
        return True
    return False


def _explained(state: TraceState, func, args, kwargs, roots: list[Tensor]) -> Any:
    """Run a backward; if PyTorch refuses, add what the trace knows to its error and re-raise it."""
    try:
        return func(*args, **kwargs)
    except RuntimeError as error:
        state.ddp.error(error, user_site(2))
        if state.explain_backward_error is not None:
            state.explain_backward_error(state, error, roots)
        raise


def _backward_roots(func, args, kwargs) -> list[Tensor]:
    first = args[0] if args else kwargs.get("tensors", kwargs.get("self"))
    if isinstance(first, Tensor):
        return [first]
    return [t for t in first if isinstance(t, Tensor)]


@functools.cache
def _handler_table() -> dict[Any, Callable[..., Any]]:
    """Which torch functions take which handler; built once (it looks through all of torch)."""
    T = torch.Tensor
    mode = Interceptor
    table: dict[Any, Callable[..., Any]] = {
        T.item: mode.on_item,
        T.tolist: mode.on_scalar,
        T.__float__: mode.on_scalar,
        T.__int__: mode.on_scalar,
        T.__index__: mode.on_scalar,
        T.numpy: mode.on_numpy,
        T.__array__: mode.on_numpy,
        torch.tensor: mode.on_rewrap,
        torch.as_tensor: mode.on_rewrap,
        torch.asarray: mode.on_rewrap,
        T.detach: mode.on_detach,
        T.detach_: mode.on_detach,
        # Attribute descriptors (torch's C tensor base defines them; the public class reaches them): a mode
        # receives their __get__/__set__ as the function called.
        T.data.__get__: mode.on_data_get,
        T.data.__set__: mode.on_data_set,
        T.grad.__get__: mode.on_grad_get,
        T.requires_grad_: mode.on_requires_grad,
        T.requires_grad.__set__: mode.on_requires_grad,
        T.backward: mode.on_backward,
        torch.autograd.backward: mode.on_backward,
        torch.autograd.grad: mode.on_autograd_grad,
    }
    for name in dir(T):
        if name.endswith("_") and not name.startswith("_") and name not in ("requires_grad_", "detach_",
                                                                            "share_memory_"):
            table.setdefault(getattr(T, name), mode.on_inplace)
    for name in ("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                 "__ipow__", "__imod__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"):
        if hasattr(T, name):
            table[getattr(T, name)] = mode.on_inplace
    for name in dir(torch):
        if name.endswith("_") and not name.startswith("_") and callable(getattr(torch, name)):
            table.setdefault(getattr(torch, name), mode.on_inplace)
    table[T.copy_] = mode.on_copy
    table[T.set_] = mode.on_copy
    for name in ZERO_DERIVATIVE:
        for owner in (T, torch):
            func = getattr(owner, name, None)
            if func is not None:
                table[func] = mode.on_zero_derivative
    for name in _CONVERSIONS:
        table[getattr(T, name)] = mode.on_conversion
    return table
