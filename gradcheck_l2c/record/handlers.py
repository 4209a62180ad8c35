"""What each interesting torch call means for the record: the handlers of the interceptor's table.

Each takes the interceptor (``mode``), the torch function and its arguments, runs the function, reports
what it saw to the parts of the trace state, and returns the result unchanged.
"""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable, Protocol

import torch
from torch import nn

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.args import any_requires_grad, op_label, requires_grad_in, tensors_in
from gradcheck_l2c.record.backward_calls import on_autograd_grad
from gradcheck_l2c.record.copies import on_copy
from gradcheck_l2c.record.cuts import CutRecorder
from gradcheck_l2c.record.gradient_readers import on_register_hook, on_retain_grad
from gradcheck_l2c.record.handed_in import handed_in_site
from gradcheck_l2c.record.kept_states import detached_in_place
from gradcheck_l2c.record.locations import (
    DIFFERENTIATORS,
    Site,
    called_by_user_past_torch,
    called_from,
    caller_is_user,
    library_callers,
    user_frame,
    user_site,
)
from gradcheck_l2c.record.scope import Scope
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.torch_internals import STATE_DICT_SAVE
from gradcheck_l2c.record.unregistered import constructing_module
from gradcheck_l2c.record.writes import WriteLog

Tensor = torch.Tensor
_is_grad_enabled = torch.is_grad_enabled

#: A sparse tensor's index tensors: where its values sit, which carry no gradient whatever the values do.
SPARSE_STRUCTURE = frozenset(getattr(torch.Tensor, name) for name in (
    "_indices", "indices", "crow_indices", "col_indices", "ccol_indices", "row_indices") if hasattr(torch.Tensor, name))
#: Ops whose derivative is zero almost everywhere: a path through them carries no gradient.
ZERO_DERIVATIVE = ("round", "floor", "ceil", "sign", "trunc", "fix", "sgn", "heaviside")
#: Random draws whose derivative PyTorch defines as zero for their parameters (no reparameterization).
SAMPLING = ("normal", "bernoulli", "poisson")
_CONVERSIONS = {"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "type", "type_as"}
#: Normalisations over one dimension: given a dimension of size 1 their output is a constant (softmax 1,
#: log_softmax 0), so nothing reaches the input (a one-logit softmax, a top-1 gate's softmax).
NORMALISING = frozenset(getattr(owner, name) for owner in (torch.Tensor, torch, torch.nn.functional)
                        for name in ("softmax", "log_softmax"))


class Mode(Protocol):
    """What a handler uses of the interceptor that called it."""

    state: TraceState
    scope: Scope
    writes: WriteLog
    cuts: CutRecorder


def non_differentiable(mode: Mode, func, args, kwargs, dead: list[Tensor]) -> None:
    """An op in grad mode turned inputs with history into outputs without any (a sparse tensor's indices, its
    structure and not its values, excepted)."""
    inputs = [a for a in tensors_in(args, kwargs) if a.requires_grad]
    if not inputs or func in SPARSE_STRUCTURE:
        return
    state = mode.state
    output = "bool" if all(d.dtype == torch.bool for d in dead) else "integer"  # a mask, or indices/a cast
    if output == "bool" and not caller_is_user(2):
        return  # a library's own check (torch.distributions validating its arguments): control flow, no value
    # a single bool (``torch.norm(b) == 0``) is a test that Python control flow reads, not a mask
    test = {"test": True} if output == "bool" and all(d.numel() == 1 for d in dead) else {}
    taint = mode.cuts.cut("non_differentiable", op_label(func), inputs, site=user_site(2), output=output, **test)
    if taint is not None:
        taint = state.taints.merge(taint, state.taints.of_args(args, kwargs))
        for out in dead:
            state.taints.set(out, taint)


def on_item(mode: Mode, func, args, kwargs):
    out = func(*args, **kwargs)
    tensor = args[0]
    state = mode.state
    if tensor.requires_grad or state.taints:
        taint = mode.cuts.cut("item", ".item()", [tensor])
        if taint is not None and type(out) is float:
            return state.taints.tainted_float(out, taint)
    return out


def on_scalar(mode: Mode, func, args, kwargs):
    tensor = args[0]
    if tensor.requires_grad and not mode.scope.constructing:
        label = {"__float__": "float()", "__int__": "int()", "tolist": ".tolist()",
                 "__index__": "int()"}.get(func.__name__, func.__name__)
        mode.cuts.cut("item", label, [tensor])
    return func(*args, **kwargs)


def on_numpy(mode: Mode, func, args, kwargs):
    out = func(*args, **kwargs)
    tensor = args[0]
    state = mode.state
    if state.taints:
        label = ".numpy()" if func.__name__ == "numpy" else "np.asarray()"
        taint = mode.cuts.numpy_exits.left(state.taints.get(tensor), label, user_site(1), 1)
        if taint is not None:
            state.taints.set(out, taint)
    return out


def on_rewrap(mode: Mode, func, args, kwargs):
    out = func(*args, **kwargs)
    data = args[0] if args else kwargs.get("data")
    if isinstance(data, Tensor) and out is data:
        return out  # as_tensor of a tensor returns it unchanged: nothing is cut
    site = handed_in_site(data, 1)  # a helper of the user's that only converts what it got: where it got it
    mode.cuts.rewrap(f"torch.{func.__name__}()", data, out, site, kwargs.get("requires_grad") is True)
    return out


def on_detach(mode: Mode, func, args, kwargs):
    tensor = args[0]
    in_place = func is Tensor.detach_  # its graph goes with it: what it cuts is told first, then it runs
    node = tensor.grad_fn if in_place else None  # `h.detach_()` of a state kept on a module
    out = tensor if in_place else func(*args, **kwargs)
    state = mode.state
    if node is not None:
        detached_in_place(node, user_site(1), state.origins.detached_states)
    if tensor.requires_grad or state.taints:
        if caller_is_user(2) and _cuts_nothing_new(state, tensor):  # `p.detach()` of a trained weight, say
            state.taints.mark(out, state.taints.get(tensor))
            return func(*args, **kwargs) if in_place else out
        callers = library_callers(1)
        if _library_copy(state, tensor, callers):
            state.taints.mark(out, state.taints.get(tensor))
            return func(*args, **kwargs) if in_place else out
        in_state_dict = STATE_DICT_SAVE in callers
        label = "state_dict()" if in_state_dict else f".{func.__name__}()"
        taint = mode.cuts.cut("detach", label, [tensor])
        if taint is None:
            mode.cuts.settled_exits.left("detach", label, tensor, out)
        state.taints.mark(out, taint)
        if in_state_dict and tensor.is_leaf and tensor.requires_grad and called_by_user_past_torch(1):
            mode.writes.snapshot(tensor, out)  # an installed library's own state_dict() views are its business
    return func(*args, **kwargs) if in_place else out


def on_data_get(mode: Mode, func, args, kwargs):
    tensor = args[0]
    out = func(*args, **kwargs)
    state = mode.state
    if tensor.requires_grad or state.taints:
        if caller_is_user(2) and _cuts_nothing_new(state, tensor):
            state.taints.mark(out, state.taints.get(tensor))
            return out
        if _library_copy(state, tensor, library_callers(1)):
            state.taints.mark(out, state.taints.get(tensor))
            return out
        taint = mode.cuts.cut("data_attr", ".data", [tensor])
        if taint is None:
            mode.cuts.settled_exits.left("data_attr", ".data", tensor, out)
        state.taints.mark(out, taint)
    return out


def on_data_set(mode: Mode, func, args, kwargs):
    target, value = args[0], args[1]
    out = func(*args, **kwargs)
    if target.requires_grad:
        mode.cuts.reenter("data_attr", ".data = ...", [value], [target], site=user_site(1))
    return out


def on_grad_get(mode: Mode, func, args, kwargs):
    out = func(*args, **kwargs)
    if caller_is_user(2):
        state = mode.state
        state.backwards.grad_read(args[0], out)
        key = state.registry.key_of(args[0]) if out is not None else None
        if key is not None:  # a write into it is a write into the gradient (`UpdateLog.grad_written`)
            state.updates.grad_read(key, out)
    return out


def on_grad_set(mode: Mode, func, args, kwargs):
    """``p.grad = g`` in user code: a gradient computed another way (``torch.func``, per-sample clipping)."""
    out = func(*args, **kwargs)
    if isinstance(args[1], Tensor) and caller_is_user(2):
        mode.state.backwards.assigned(args[0])
        key = mode.state.registry.key_of(args[0])
        if key is not None:
            mode.state.updates.grad_written(key, user_site(1))
    return out


def on_requires_grad(mode: Mode, func, args, kwargs):
    """``a.requires_grad_()`` or ``a.requires_grad = True`` in user code makes a user leaf, as
    ``requires_grad=True`` at creation; switched off anywhere (``model.requires_grad_(False)``, a library
    freezing its own weights) a watched tensor is frozen from now on, as recorded here."""
    out = func(*args, **kwargs)
    tensor = args[0]
    registry = mode.state.registry
    if tensor.requires_grad and tensor.is_leaf and caller_is_user(2):
        registry.watch_leaf(tensor, user_site(1), user_leaf=True, made=False)
    # the user line that froze it (the line to change if all end frozen), or made a parameter trainable
    registry.switched(tensor, user_site(1) if not tensor.requires_grad or isinstance(tensor, nn.Parameter) else None)
    if not tensor.requires_grad and constructing_module(user_frame(1)) is not None:
        mode.state.backwards.empty_reads.built_frozen(registry.key_of(tensor))
    return out


def on_zero_derivative(mode: Mode, func, args, kwargs, output: str = "step"):
    out = func(*args, **kwargs)
    state = mode.state
    if _is_grad_enabled() and isinstance(out, Tensor) and _zero_cut(mode, func, args, kwargs, out, output,
                                                                    user_site(1)):
        return out
    if state.taints or not _is_grad_enabled():
        state.taints.mark(out, state.taints.of_args(args, kwargs))
    return out


def _zero_cut(mode: Mode, func, args, kwargs, out: Tensor, output: str, site: Site | None) -> bool:
    """``out`` sends no gradient back to the inputs with history: a cut at ``site``; False if none had any."""
    inputs = [a for a in tensors_in(args, kwargs) if a.requires_grad]
    if not inputs:
        return False
    state = mode.state
    taint = mode.cuts.cut("non_differentiable", op_label(func), inputs, site=site, output=output)
    state.taints.mark(out, state.taints.merge(taint, state.taints.of_args(args, kwargs)))
    graph.mark_zero_derivative(out)
    return True


def constant_over_one(mode: Mode, func, args, kwargs, out: Tensor) -> bool:
    """softmax / log_softmax of a tensor with history (``func`` in `NORMALISING`): over a dimension of size 1
    the output is a constant, a path without gradient, named where a torch layer was given that dim. Whether it
    was one (a softmax over more elements records nothing, and leaves its layer free to run past the mode)."""
    source = args[0] if args else kwargs.get("input")
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    if isinstance(source, Tensor) and isinstance(dim, int) and source.dim() and source.shape[dim] == 1:
        site = mode.writes.layer_site(sys._getframe(1)) or user_site(1)  # nn.Softmax(dim=1)'s line, or the call
        _zero_cut(mode, func, args, kwargs, out, "constant", site)
        return True
    return False


def on_sample(mode: Mode, func, args, kwargs):
    return on_zero_derivative(mode, func, args, kwargs, output="sample")


def on_conversion(mode: Mode, func, args, kwargs):
    out = func(*args, **kwargs)
    tensor, state = args[0], mode.state
    if state.taints:
        state.taints.mark(out, state.taints.of_args(args, kwargs))
    if isinstance(out, Tensor) and out is not tensor and out.grad_fn is not None \
            and tensor.is_leaf and tensor.requires_grad:
        remember_site(out)
    elif not _is_grad_enabled() and (requires_grad_in(args, kwargs) or state.taints.numbers) \
            and mode.scope.pid == os.getpid():  # else nothing to cut: the inputs' taints were marked above
        mode.cuts.no_grad_op(func, args, kwargs, out)
    return out


def on_inplace(mode: Mode, func, args, kwargs):
    state = mode.state
    target = args[0] if args else None
    writes = mode.writes
    if state.updates.grad_ids and id(target) in state.updates.grad_ids:  # a write into a gradient the user read
        state.updates.grad_written(state.updates.grad_ids[id(target)], user_site(1))
    if not _is_grad_enabled():
        if writes.snapshots:
            writes.check_snapshots(func, args)
        out = func(*args, **kwargs)
        if (state.taints or any_requires_grad(args, 1) or any_requires_grad(kwargs.values(), 0)) \
                and mode.scope.pid == os.getpid():
            mode.cuts.no_grad_op(func, args, kwargs, out)
        return out
    if writes.snapshots:
        writes.check_snapshots(func, args)
    out = func(*args, **kwargs)
    if isinstance(target, Tensor):
        writes.wrote(target, user_site(1), op_label(func))
        if state.taints:
            merged = state.taints.of_args(args, kwargs)
            if merged is not None:
                state.terms.added(func, args, target)
                state.taints.set(target, merged)
    return out


def remember_site(out: Tensor, modules: list[str] | None = None) -> None:
    """Store on the output's autograd node the user line (and module) that made it, for drawing."""
    metadata = out.grad_fn.metadata
    site = user_site(2)
    if site is not None:
        metadata["gradcheck_site"] = (site.file, site.line)
    if modules:
        metadata["gradcheck_module"] = modules[-1]


def _cuts_nothing_new(state: TraceState, tensor: Tensor) -> bool:
    """Whether a detach of ``tensor`` in user code records no cut (as `CutRecorder.cut` would find, at more cost): it
    reaches no watched tensor, or a watched leaf whose gradient already arrived where meant (`TaintStore.settled`)."""
    if not tensor.requires_grad:
        return True
    if graph.grad_fn_of(tensor) is not None:
        return False
    key = state.registry.key_of(tensor)  # an unwatched Parameter (made before the trace) is adopted by the cut
    return not isinstance(tensor, torch.nn.Parameter) if key is None else key in state.taints.settled


def _library_copy(state: TraceState, tensor: Tensor, callers: tuple[str, ...]) -> bool:
    """A detach or ``.data`` read that copies, not cuts: ``copy.deepcopy`` makes new leaves (watched
    under their own names), and differentiation APIs differentiate a detached copy of the user's leaf."""
    if "__deepcopy__" in callers:
        watched = state.registry.get(tensor)
        if watched is not None:
            watched.copied = True
        return True
    if callers and called_from(DIFFERENTIATORS, 2):  # without library frames in between, none of those files
        state.cuts.differentiated_by_library(tensor)
        return True
    return False


#: Handlers that record nothing when gradients are on, no argument requires grad and no taint is alive, bar an
#: in-place write into a tensor without history (kept among the latest writes; a torch layer's later calls on
#: alike inputs make the same, `bypass.ModuleBypass`).
PASSIVE_ON_PLAIN = frozenset((on_item, on_scalar, on_numpy, on_detach, on_data_get, on_data_set, on_grad_get,
                              on_grad_set, on_copy, on_zero_derivative, on_sample, on_conversion, on_inplace))


@functools.cache
def handler_table() -> dict[Any, Callable[..., Any]]:
    """Which torch functions take which handler; built once (it looks through all of torch)."""
    T = torch.Tensor
    table: dict[Any, Callable[..., Any]] = {
        T.item: on_item,
        T.tolist: on_scalar,
        T.__float__: on_scalar,
        T.__int__: on_scalar,
        T.__index__: on_scalar,
        T.numpy: on_numpy,
        T.__array__: on_numpy,
        torch.tensor: on_rewrap,
        torch.as_tensor: on_rewrap,
        torch.asarray: on_rewrap,
        T.detach: on_detach,
        T.detach_: on_detach,
        T._values: on_detach,  # a sparse COO tensor's values, detached (``.values()`` keeps the graph)
        # Attribute descriptors (torch's C tensor base defines them; the public class reaches them): a mode
        # receives their __get__/__set__ as the function called.
        T.data.__get__: on_data_get,
        T.data.__set__: on_data_set,
        T.grad.__get__: on_grad_get,
        T.grad.__set__: on_grad_set,
        T.requires_grad_: on_requires_grad,
        T.requires_grad.__set__: on_requires_grad,
        torch.autograd.grad: on_autograd_grad,
        T.register_hook: on_register_hook,
        T.retain_grad: on_retain_grad,
    }
    for name in dir(T):
        if name.endswith("_") and not name.startswith("_") and name not in ("requires_grad_", "detach_",
                                                                            "share_memory_"):
            table.setdefault(getattr(T, name), on_inplace)
    for name in ("__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
                 "__ipow__", "__imod__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__"):
        if hasattr(T, name):
            table[getattr(T, name)] = on_inplace
    for name in dir(torch):
        if name.endswith("_") and not name.startswith("_") and callable(getattr(torch, name)):
            table.setdefault(getattr(torch, name), on_inplace)
    table[T.copy_] = on_copy
    table[T.set_] = on_copy
    for name in ZERO_DERIVATIVE:
        for owner in (T, torch):
            func = getattr(owner, name, None)
            if func is not None:
                table[func] = on_zero_derivative
    for name in SAMPLING:
        for owner in (T, torch):
            func = getattr(owner, name, None)
            if func is not None:
                table[func] = on_sample
    for name in _CONVERSIONS:
        table[getattr(T, name)] = on_conversion
    return table
