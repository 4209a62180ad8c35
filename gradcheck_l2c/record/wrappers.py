"""What a trace puts in place of torch functions and classes: each wraps the original, calls it, and tells
the trace state what it saw; `patches.py` installs them and puts the originals back.
"""
from __future__ import annotations

import functools
import os
import sys
import threading
import weakref
from typing import Any, Callable

import torch
from torch import nn
from torch.overrides import has_torch_function_unary

from gradcheck_l2c.record.arrival_hooks import backward_ended, backward_starts, run_elsewhere
from gradcheck_l2c.record.entries import entry_ref
from gradcheck_l2c.record.gradient_gates import note_tensor_args
from gradcheck_l2c.record.hidden_inputs import entry_site, hidden_tensors
from gradcheck_l2c.record.kept_states import kept_as
from gradcheck_l2c.record.locations import (USER, asked_at, built_at, caller_is_user, frame_kind, inside_forward,
                                            library_callers, user_frame, user_site)
from gradcheck_l2c.record.optimizers import note_sources
from gradcheck_l2c.record.param_sources import binds_name
from gradcheck_l2c.record.scope import Scope
from gradcheck_l2c.record.stacks import user_stack, user_stack_sites
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.torch_internals import functions_off, innermost_mode_is, is_compiling, pop_mode, push_mode
from gradcheck_l2c.record.unregistered import constructing_module
from gradcheck_l2c.record.warning_sites import untraced_target
from gradcheck_l2c.record.watch import line_in_forward


def parameter_new(state: TraceState, original: Callable[..., Any]) -> Callable[..., Any]:
    """``nn.Parameter(...)``: a Parameter the user wraps around a computed tensor is a new leaf without its
    history; a copy's is a leaf of its own; one a torch layer makes from a watched tensor reparametrises it."""
    def new(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
        param = original(cls, data, requires_grad)
        if not state.scope.in_trace_thread():
            return param
        with functions_off():  # the tool's reads of these tensors, past the interceptor: not the script's
            site = user_site(1)
            created, ident = state.registry.created, id(param)
            built = built_at(1) if state.clock.optimizers else None
            created[ident] = (entry_ref(param, created, ident), site,
                              state.clock.optimizers, built, built is not None and binds_name(built))
            if caller_is_user(1):  # written by the user, not made inside a torch layer
                wrapped = state.registry.get(data) if isinstance(data, torch.Tensor) and data.is_leaf else None
                if wrapped is not None and param.requires_grad:  # nn.Parameter(torch.ones(..., requires_grad=True)):
                    wrapped.replaced = True  # same values, no cut (with requires_grad=False: a copy that cuts it)
                elif isinstance(data, torch.Tensor) and (data.requires_grad or state.taints):
                    state.cuts.reenter("new_parameter", "nn.Parameter()" if param.requires_grad else
                                       "nn.Parameter(requires_grad=False)", [data], [param], site=site)
                state.registry.watch_leaf(param, site, user_leaf=True)  # made with requires_grad=False: not watched
                watched = state.registry.get(param)
                state.unregistered.made_by(watched and watched.key, constructing_module(sys._getframe(1)))
                if watched is not None and inside_forward(sys._getframe(1)) is not None:
                    watched.made_in_forward = True  # lazily, at a module's first call (or anew at every call)
                    watched.forward_line = line_in_forward(sys._getframe(1))
            elif "__deepcopy__" in library_callers(1):
                state.taints.mark(param, state.taints.get(data))  # a copy is a new leaf of its own, not a cut
                state.registry.watch_leaf(param, site)
            elif isinstance(data, torch.Tensor):
                state.cuts.reparametrised(data)  # weight_norm, spectral_norm, parametrize: judged through param
        return param

    return new


def optimizer_init(state: TraceState, original: Callable[..., Any],
                   quiet_steps: Callable[[type], None]) -> Callable[..., Any]:
    """``Optimizer.__init__``: remember the optimizer, where it was built and what its parameter list was made of;
    a non-leaf refused is explained at the line that made it; two optimizers holding one parameter are noted;
    ``quiet_steps`` lets torch's own ``step()`` of its class run past the interceptor."""
    def init(optimizer: Any, *args: Any, **kwargs: Any) -> None:
        try:
            original(optimizer, *args, **kwargs)
        except ValueError:  # "can't optimize a non-leaf Tensor": the line that made it is the one to change
            if state.scope.in_trace_thread():
                state.backwards.refused_by_optimizer(args[0] if args else kwargs.get("params"))
            raise
        if not state.scope.in_trace_thread():
            return
        quiet_steps(type(optimizer))
        with functions_off():  # the tool's reads of the parameters, past the interceptor
            others = [other for other in state.optimizers.live.values() if other.optimizer() is not None]
            state.clock.optimizers += 1
            frame, site = asked_at(optimizer, 1)
            record = state.optimizers.record_for(optimizer, site)
            record.created, record.ordinal = state.clock.steps, state.clock.optimizers
            if frame is not None:
                note_sources(record, frame, state.registry)
            for ref in record.params:
                param = ref()
                if param is not None and not param.requires_grad:
                    state.unregistered.plain_attribute(state.registry, param, record.site)
            for other in others:
                for ref in record.params:
                    param = ref()
                    key = state.registry.key_of(param)
                    if key is not None and other.holds(param):
                        # judged at the end: a warning only if both then step it (rebinding is silent)
                        state.events.record("optimizer", key, record.site, record.name, first=other.name,
                                            records=(other, record))

    return init


def module_setattr(state: TraceState, original: Callable[..., Any],
                   changed: Callable[[nn.Module, str], None]) -> Callable[..., Any]:
    """``self.keys = torch.randn(...)``: remember where user code put a plain tensor, a list or a dict on a
    module (the line to change if what it holds was meant to learn), and where it set a submodule; ``changed``
    hears of every attribute set, as does the registry (`WatchRegistry.changes`; ``training`` names nothing)."""
    registry = state.registry
    assigned, placed = registry.assigned, registry.placed

    def setattr_(module: nn.Module, name: str, value: Any) -> None:
        original(module, name, value)
        changed(module, name)
        if name != "training":
            registry.changes += 1
        if value is True and name == "inplace" and state.scope.in_trace_thread():
            state.writes.layer_made_inplace(module, user_site(1))  # torch's layers' own switch
        elif name == "dim" and type(value) is int and state.scope.in_trace_thread() and not caller_is_user(1):
            state.writes.layer_given_dim(module, user_site(1))  # nn.Softmax(dim=1): its constructor sets it
        elif name == "requires_grad" and type(value) is bool and caller_is_user(1) and state.scope.in_trace_thread():
            state.unregistered.flags.set(module, value, user_site(1))  # not requires_grad_(): no parameter reads it
        kind = type(value)
        if kind is torch.Tensor or kind in (list, tuple, dict) or isinstance(value, nn.Module):
            if state.scope.in_trace_thread() and caller_is_user(1):
                if not isinstance(value, nn.Module):
                    site = user_site(1)
                    assigned[(id(module), name)] = (weakref.ref(module), site)
                    if not torch.is_grad_enabled():  # a cache filled while gradients are off: training may reuse it
                        state.cuts.settled_exits.kept_on(module, name, value, site)
                    if kind is torch.Tensor:
                        with functions_off():  # the tool's reads of the tensor, past the interceptor
                            state.unregistered.assigned(module, value)
                            if value.is_inference():
                                state.origins.stored(value, site)
                            elif value.grad_fn is not None:
                                state.origins.kept(value, site)
                                kept_as(value, module, name)
                else:
                    # after an optimizer was built, with the frames on the way (`WatchRegistry.joined`)
                    placed[id(value)] = (user_site(1), id(module), user_stack(1) if state.clock.optimizers else ())

    return setattr_


def function_apply(state: TraceState, original: Any) -> Callable[..., Any]:
    """``autograd.Function.apply``: a custom Function's forward runs without grad by design, which is no cut;
    the watched leaves it used without taking them as inputs are (`CutRecorder.function_ran`), and so are the values
    with history handed to it inside another argument (`hidden_inputs`)."""
    def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
        if not state.scope.in_trace_thread():
            return original.__get__(None, cls)(*args, **kwargs)
        hidden = hidden_tensors(args, kwargs)
        if hidden:
            state.cuts.cut("non_differentiable", f"{cls.__name__}.apply()", hidden,
                           site=entry_site(hidden, sys._getframe(1)), output="hidden")
        scope = state.scope
        scope.custom_forwards.append(cls.__name__)
        used: set[int] = set()
        scope.captured.append(used)
        try:
            out = original.__get__(None, cls)(*args, **kwargs)
        finally:
            scope.captured.pop()
            scope.custom_forwards.pop()
        if used:
            state.cuts.function_ran(cls, args, used)
        note_tensor_args(out, args)
        if state.origins.recording:  # the first iteration: its outputs' lines, as the interceptor notes an op's
            state.origins.made(out)
        if type(out) is torch.Tensor and out.requires_grad:  # its one output: discarded, it is a dropped term
            state.terms.dropped.made(out, whole=True)
        return out

    return apply


def legacy_call(state: TraceState, original: Callable[..., Any]) -> Callable[..., Any]:
    """``autograd.Function.__call__``: PyTorch refuses to run an instance of an old-style Function (``forward`` and
    ``backward`` written as instance methods, a gradient reversal layer's ``GradReverse(lambd)(x)``); the refusal is
    recorded as one of autograd's errors at the user's line that called it, and propagates unchanged."""
    @functools.wraps(original)
    def call(function: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(function, *args, **kwargs)
        except RuntimeError as error:
            if state.scope.in_trace_thread():
                state.op_failed(error, type(function), args, kwargs)
            raise

    return call


def ddp_params(state: TraceState, original: Callable[..., Any]) -> Callable[..., Any]:
    """DDP builds its reducer: the parameters it returns are those DDP's indices count."""

    def build(ddp: Any) -> Any:
        params, sparse = original(ddp)
        state.registry.add_module(ddp.module)
        for name, param in ddp.module.named_parameters():
            state.registry.watch_leaf(param, None, owner=(ddp.module, name))  # a model built before the trace
        state.ddp.wrapped(ddp, params, state.registry.key_of, len(state.events))
        return params, sparse

    return build


def ddp_forward(state: TraceState, original: Callable[..., Any]) -> Callable[..., Any]:
    """Count DDP forwards; keep DDP's unused-parameter error, raised here about the last iteration."""
    log, registry = state.ddp, state.registry

    def forward(ddp: Any, *args: Any, **kwargs: Any) -> Any:
        record = log.forward(ddp, len(state.events))
        try:
            return original(ddp, *args, **kwargs)
        except RuntimeError as error:
            frozen = frozenset(k for k in map(registry.key_of, ddp.parameters())
                               if k is not None and not registry.all[k].tensor.requires_grad)
            log.error(error, user_site(1), record, frozen, in_forward=True)
            raise

    return forward


def tensor_backward(mode: Any, original: Callable[..., Any]) -> Callable[..., Any]:
    """``Tensor.backward`` of a plain tensor handed to the interceptor (``mode``) as torch hands it there, with the
    same arguments and the mode off the stack while it runs, minus torch's generic dispatch (about 4 µs a backward:
    a loop that steps a small model pays it at every step). Any other call is torch's own. ``original`` itself when
    it is not torch's own (a script's loss-scaling wrapper: `interceptor.replaced_backward` runs it as it is)."""
    Tensor = torch.Tensor
    code, torch_file = getattr(original, "__code__", None), Tensor.register_hook.__code__.co_filename
    if code is None or hasattr(original, "__wrapped__") or code.co_filename != torch_file:
        return original

    @functools.wraps(original)
    def backward(self: Any, gradient: Any = None, retain_graph: Any = None, create_graph: bool = False,
                 inputs: Any = None) -> Any:
        # torch asks no mode with torch functions off (DisableTorchFunction): nor does this
        if type(self) is not Tensor or not has_torch_function_unary(self) or not innermost_mode_is(mode):
            return original(self, gradient, retain_graph, create_graph, inputs)
        pop_mode()
        try:
            return mode.__torch_function__(original, (Tensor,), (self,), {
                "gradient": gradient, "retain_graph": retain_graph, "create_graph": create_graph, "inputs": inputs})
        finally:
            push_mode(mode)

    return backward


class CountingEngine:
    """Stands in for autograd's engine (``Variable._execution_engine``, through which every
    ``backward`` and ``autograd.grad`` runs): counts the passes started by threads the trace does
    not cover, tells the trace which graph each of its own passes freed, and otherwise forwards
    everything unchanged."""

    def __init__(self, engine: Any, state: TraceState) -> None:
        self._engine, self._scope = engine, state.scope
        self._origins = state.origins  # told, in the traced thread, of each backward before it runs and after it
        self._registry = state.registry  # as are the leaves whose gradient is read from .grad (`arrival_hooks`)
        self._terms = state.terms.dropped  # and the live scalars that may be loss terms, before it runs
        self._refusals = state.hook_refusals  # and of a backward refused inside another's hook

    def run_backward(self, *args: Any, **kwargs: Any) -> Any:
        scope = self._scope
        if not scope.in_trace_thread():
            if scope.in_trace_process():
                scope.untraced_backward(threading.current_thread().name, user_site(1))
                return run_elsewhere(self._registry, lambda: self._engine.run_backward(*args, **kwargs))
            return self._engine.run_backward(*args, **kwargs)
        roots = args[0] if args else kwargs.get("tensors")
        keep_graph = bool(args[2] if len(args) > 2 else kwargs.get("keep_graph", False))
        returns = not kwargs.get("accumulate_grad", args[6] if len(args) > 6 else True)  # autograd.grad's pass
        freeing = self._origins.backward_starts(roots, keep_graph, returns)
        nested = self._registry.polling.running  # a backward of this thread runs: this one is inside its hook
        backward_starts(self._registry)
        if self._terms.fresh:
            self._terms.backward_starts(roots)
        try:
            out = self._engine.run_backward(*args, **kwargs)
        except RuntimeError as error:
            if nested:
                self._refusals.refused(error, roots, user_frame(1))
            raise
        finally:
            backward_ended(self._registry)
        self._origins.backward_ran(freeing)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def user_located(show: Callable[..., Any]) -> Callable[..., Any]:
    """``warnings.showwarning`` that shows a warning where it would point untraced (`warning_sites`): warnings from
    C++ name the innermost Python frame, the interceptor's during a trace, and a torch warning's fixed
    ``stacklevel`` falls short of the user's line by the frames the trace put in between."""

    def showwarning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                    line: str | None = None) -> None:
        target = untraced_target(filename, lineno)
        if target is not None:
            (filename, lineno), line = target, None
        show(message, category, filename, lineno, file, line)

    return showwarning


_DATA_LOADING = os.path.join(os.path.dirname(torch.__file__), "utils", "data") + os.sep


def process_start(scope: Scope, original: Callable[..., Any]) -> Callable[..., Any]:
    """``multiprocessing``'s ``Process.start`` (also behind Pool, ProcessPoolExecutor and torch.multiprocessing):
    the child runs under a trace of its own whose findings join this one's (``scope.follow_child``). DataLoader's
    workers, which only load data, are left out."""
    @functools.wraps(original)
    def start(process: Any) -> Any:
        if scope.in_trace_thread() and scope.in_trace_process() and not library_callers_in(_DATA_LOADING):
            site = user_site(1)
            if scope.follow_child is not None:
                return scope.follow_child(process, site, functools.partial(original, process))
            scope.untraced_child(site, "nothing traces child processes here")
        return original(process)

    return start


def library_callers_in(folder: str) -> bool:
    """Whether code in ``folder`` is on the stack between the caller and the user's code."""
    frame = sys._getframe(2)
    while frame is not None and frame_kind(frame.f_code.co_filename) != USER:
        if frame.f_code.co_filename.startswith(folder):
            return True
        frame = frame.f_back
    return False


def clipping(state: TraceState, clip: Callable[..., Any]) -> Callable[..., Any]:
    """Gradient clipping, noting where it clipped to a norm or value of 0 (every gradient becomes zeros)."""
    @functools.wraps(clip)
    def clipped(*args: Any, **kwargs: Any) -> Any:
        out = clip(*args, **kwargs)
        bound = args[1] if len(args) > 1 else kwargs.get("max_norm", kwargs.get("clip_value"))
        if isinstance(bound, (int, float)) and bound == 0 and state.scope.in_trace_thread():
            state.updates.clipped(user_site(1))
        return out

    return clipped


def clearing(state: TraceState, zero_grad: Callable[..., Any]) -> Callable[..., Any]:
    """An optimizer's (or a module's) ``zero_grad``, which also notes where it ran (the line that erased the gradients
    a later ``step()`` finds missing, or a ``.grad`` read finds None)."""
    @functools.wraps(zero_grad)
    def cleared(optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        if state.scope.in_trace_thread():
            state.optimizers.cleared(optimizer, *user_stack_sites(1))
        return zero_grad(optimizer, *args, **kwargs)

    return cleared


def scheduler_init(state: TraceState, original: Callable[..., Any]) -> Callable[..., Any]:
    """A learning-rate scheduler's ``__init__``: where it was built, the line to change when its rate falls to 0
    before the run ends."""
    @functools.wraps(original)
    def init(scheduler: Any, optimizer: Any, *args: Any, **kwargs: Any) -> None:
        original(scheduler, optimizer, *args, **kwargs)
        if state.scope.in_trace_thread() and not is_compiling():
            record = state.optimizers.live.get(id(optimizer))
            if record is not None and record.optimizer() is optimizer:
                state.updates.scheduled(record, user_site(1))

    return init


def scheduler_step(state: TraceState, original: Callable[..., Any]) -> Callable[..., Any]:
    """A learning-rate scheduler's ``step()`` called by user code while its optimizer has not stepped: the first such
    line, and how often (a schedule stepped where the optimizer's own step belongs)."""
    @functools.wraps(original)
    def step(scheduler: Any, *args: Any, **kwargs: Any) -> Any:
        if state.scope.in_trace_thread() and not is_compiling() and caller_is_user(1):
            optimizer = getattr(scheduler, "optimizer", None)
            record = state.optimizers.live.get(id(optimizer))
            if record is not None and record.optimizer() is optimizer and record.step_order < 0:
                record.scheduler_step = record.scheduler_step or user_site(1)
                record.scheduler_steps += 1
        return original(scheduler, *args, **kwargs)

    return step
