"""The hooks and patches a trace installs besides its torch-function mode, each undone on exit.

- global parameter- and module-registration hooks: name parameters after the outermost module that
  holds them, and notice modules built inside another module's forward;
- ``nn.Parameter.__new__``: notices a Parameter wrapped around a computed tensor;
- ``Optimizer.__init__``: remembers optimizers and where they were built; a global step pre-hook
  judges each training step (tensors stepped without the gradient a cut kept from them) and notices a
  ``step()`` whose gradients were all erased since the last backward;
- ``zero_grad`` and torch's own optimizers' ``step()`` (without closure): run with the interceptor quiet,
  since they touch every parameter and ``.grad`` and run no user code;
- ``torch.from_numpy`` and the legacy ``Variable(...)`` (which torch-function modes do not see):
  values coming back in without their history;
- ``autograd.Function.apply``: a custom Function's forward runs without grad by design, no cut;
- ``warnings.showwarning``: torch's warnings point at the user's line, not at the interceptor;
- autograd's engine: counts the backward passes of threads the trace does not cover, so the report
  says they ran unjudged;
- ``DistributedDataParallel``: which parameters it reduces, which modules each forward calls, its errors.

The hooks act only in the thread that started the trace (torch-function modes are per thread, and the
trace state is not shared between threads); in other threads they call straight through.
"""
from __future__ import annotations

import functools
import inspect
import os
import threading
import warnings
import weakref
from typing import Any, Callable

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim.optimizer import register_optimizer_step_pre_hook

from gradcheck_l2c.record.locations import (
    LIBRARY,
    OWN,
    caller_is_user,
    frame_kind,
    inside_forward,
    library_callers,
    user_frame,
    user_site,
)
from gradcheck_l2c.record.state import TraceState


class Patches:
    """Installs everything on ``install()``; ``restore()`` puts back exactly what was there."""

    def __init__(self, state: TraceState) -> None:
        self.state = state
        self._undo: list[Callable[[], None]] = []
        self._parents: list[nn.Module] = []  # the modules whose forward is running, outermost first
        self._child_names: dict[tuple[int, int], str] = {}  # (id(parent), id(child)) -> attribute
        self._last_step: dict[int, int] = {}  # id(optimizer) -> backward calls seen at its last step
        self._quieted: set[type] = set()  # optimizer classes whose step() was looked at

    def install(self) -> None:
        for register, hook in ((module_hooks.register_module_parameter_registration_hook, self._on_parameter),
                               (module_hooks.register_module_module_registration_hook, self._on_submodule)):
            self._undo.append(register(hook).remove)
        if self.state.record_sites:
            self._undo.append(module_hooks.register_module_forward_pre_hook(self._enter_module).remove)
            self._undo.append(module_hooks.register_module_forward_hook(self._leave_module, always_call=True).remove)
        self._undo.append(register_optimizer_step_pre_hook(self._before_step).remove)
        self._replace(torch.optim.Optimizer, "zero_grad", self._quietly(torch.optim.Optimizer.zero_grad))
        self._replace(nn.Module, "zero_grad", self._quietly(nn.Module.zero_grad))
        engine_owner = torch.autograd.variable.Variable  # before it is replaced below
        self._replace(engine_owner, "_execution_engine", _CountingEngine(engine_owner._execution_engine, self.state))
        self._replace(nn.Parameter, "__new__", staticmethod(self._parameter_new(nn.Parameter.__new__)))
        self._replace(nn.Module, "__setattr__", self._module_setattr(nn.Module.__setattr__))
        self._replace(torch.optim.Optimizer, "__init__", self._optimizer_init(torch.optim.Optimizer.__init__))
        self._replace(torch, "from_numpy", self._from_numpy(torch.from_numpy))
        variable = self._variable(torch.autograd.variable.Variable)
        self._replace(torch.autograd, "Variable", variable)
        self._replace(torch.autograd.variable, "Variable", variable)
        self._replace(torch.autograd.Function, "apply",
                      classmethod(self._function_apply(torch.autograd.Function.__dict__["apply"])))
        self._replace_attribute(warnings, "showwarning", _user_located(warnings.showwarning))
        if torch.distributed.is_available():
            from torch.nn.parallel import DistributedDataParallel as DDP

            self._undo.append(self.state.ddp.remove_hooks)
            self._replace(DDP, "_build_params_for_reducer", self._ddp_params(DDP._build_params_for_reducer))
            self._replace(DDP, "forward", self._ddp_forward(DDP.forward))

    def restore(self) -> None:
        """Undo, newest first. Each step is dropped only once it ran, and running one twice is harmless:
        a restore cut short by an interrupt is finished by the next call."""
        while self._undo:
            self._undo[-1]()
            self._undo.pop()

    def _replace(self, owner: Any, name: str, value: Any) -> None:
        """Set ``owner.name``; the undo is registered first, so an interrupted replace is undone too."""
        original = owner.__dict__[name]
        self._undo.append(lambda: setattr(owner, name, original))
        setattr(owner, name, value)

    def _replace_attribute(self, owner: Any, name: str, value: Any) -> None:
        """Like `_replace`, but leaves alone a value the traced code installed meanwhile."""
        original = getattr(owner, name)

        def undo() -> None:
            if getattr(owner, name) is value:
                setattr(owner, name, original)

        self._undo.append(undo)
        setattr(owner, name, value)

    def _on_parameter(self, module: nn.Module, name: str, param: Any) -> None:
        if param is None or not self.state.in_trace_thread():
            return
        state = self.state
        frame = user_frame(1)
        outer = inside_forward(frame.f_back if frame is not None else None)
        if outer is not None:
            if not module._parameters:  # count each new module once, not once per parameter
                state.events.record("module_in_forward", -1, user_site(1), type(module).__name__, outer=outer)
            return
        state.registry.add_module(module)
        state.watch_leaf(param, user_site(1), owner=(module, name))
        state.registry.user_leaves.pop(id(param), None)  # a module's parameter, used by name in forward

    def _enter_module(self, module: nn.Module, args: Any) -> None:
        """Track which module's forward runs, so drawn nodes can be grouped by module."""
        if not self.state.in_trace_thread():
            return
        path = self.state.module_path
        parent = path[-1] if path else None
        name = type(module).__name__
        if parent is not None:
            name = parent + "." + (self._child_names.get((id(self._parents[-1]), id(module))) or name)
        path.append(name)
        self._parents.append(module)

    def _leave_module(self, module: nn.Module, args: Any, output: Any) -> None:
        if self._parents and self._parents[-1] is module and self.state.in_trace_thread():
            self._parents.pop()
            self.state.module_path.pop()

    def _on_submodule(self, parent: nn.Module, name: str, child: Any) -> None:
        """A module gets a submodule: remember the parent, so parameters are named from the outermost."""
        if child is not None and self.state.in_trace_thread() and inside_forward(user_frame(1)) is None:
            self.state.registry.add_module(parent)
            self._child_names[(id(parent), id(child))] = name

    def _parameter_new(self, original: Callable[..., Any]) -> Callable[..., Any]:
        state = self.state

        def new(cls: type, data: Any = None, requires_grad: bool = True) -> Any:
            param = original(cls, data, requires_grad)
            if not state.in_trace_thread():
                return param
            site = user_site(1)
            created, ident = state.registry.created, id(param)
            created[ident] = (weakref.ref(param, lambda _, ident=ident: created.pop(ident, None)), site)
            if caller_is_user(1):  # written by the user, not made inside a torch layer
                if isinstance(data, torch.Tensor) and (data.requires_grad or state.taints):
                    state.reenter("new_parameter", "nn.Parameter()", [data], [param], site=site)
                state.watch_leaf(param, site, user_leaf=True)
            elif "__deepcopy__" in library_callers(1):
                state.taints.mark(param, state.taints.get(data))  # a copy is a new leaf of its own, not a cut
                state.watch_leaf(param, site)
            elif isinstance(data, torch.Tensor):
                state.reparametrised(data)  # weight_norm, spectral_norm, parametrize: judged through param
            return param

        return new

    def _module_setattr(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """``self.keys = torch.randn(...)``: remember where user code put a plain tensor on a module, the
        line to change if that tensor was meant to learn."""
        state = self.state
        assigned = state.registry.assigned

        def setattr_(module: nn.Module, name: str, value: Any) -> None:
            original(module, name, value)
            if type(value) is torch.Tensor and state.in_trace_thread() and caller_is_user(1):
                assigned[(id(module), name)] = (weakref.ref(module), user_site(1))

        return setattr_

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Judge the training step; then, for torch's own optimizers stepping without a closure (which
        would run user code), let their updates run past the interceptor: nothing there can cut a path."""
        if not self.state.in_trace_thread():
            return
        self._judge_step(optimizer)
        self._quiet_steps(type(optimizer))

    def _quiet_steps(self, cls: type) -> None:
        """From now on, ``cls.step()`` without a closure runs past the interceptor when it is torch's own
        code: its updates cannot cut a path, and they were most of a small model's tracing cost."""
        if cls in self._quieted or "step" not in cls.__dict__:
            return
        self._quieted.add(cls)
        if _library_step(cls):
            self._replace(cls, "step", self._quietly(cls.__dict__["step"], steps=True))

    def _quietly(self, original: Callable[..., Any], steps: bool = False) -> Callable[..., Any]:
        """``original`` (torch's ``zero_grad``, or a step) with the interceptor quiet: it reads and
        writes every parameter and ``.grad`` and runs no user code — unless a step is given a closure,
        or is differentiable (its updates are part of a graph)."""
        state = self.state

        @functools.wraps(original)
        def quietly(*args: Any, **kwargs: Any) -> Any:
            if not state.in_trace_thread() or (steps and (len(args) > 1 or kwargs or args[0].defaults.get(
                    "differentiable", False))):
                return original(*args, **kwargs)
            before, state.quiet = state.quiet, True
            try:
                return original(*args, **kwargs)
            finally:
                state.quiet = before

        return quietly

    def _judge_step(self, optimizer: Any) -> None:
        """Judge the training step: tensors stepped without the gradient a cut kept from them, or a
        ``step()`` with no gradient at all although backward ran since the last step: they were erased
        in between (``zero_grad()`` after ``backward()``)."""
        state = self.state
        site = user_site(1)
        record = state.optimizer_record(optimizer, site)
        state.steps += 1
        record.step_site, record.step_order = site, state.steps
        since = self._last_step.get(id(optimizer), 0)
        self._last_step[id(optimizer)] = state.backward_count
        if state.judge_step(record, site) or state.backward_count == since:
            return  # a cut explains the missing gradients
        with torch._C.DisableTorchFunction():  # torch's reads, not the user's: no need to intercept them
            params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
            if not params or any(p.grad is not None for p in params):
                return
        watched = [w for w in map(state.registry.get, params) if w is not None]
        if not any(w.last_reached > since for w in watched):
            return  # they never got gradients: that is told per tensor, not as erased ones
        key = state.registry.key_of(params[0])
        state.events.record("optimizer", -1 if key is None else key, user_site(1), "erased",
                            optimizer=type(optimizer).__name__, size=len(params))

    def _function_apply(self, original: Any) -> Callable[..., Any]:
        state = self.state

        def apply(cls: type, *args: Any, **kwargs: Any) -> Any:
            if not state.in_trace_thread():
                return original.__get__(None, cls)(*args, **kwargs)
            state.custom_forward += 1
            try:
                return original.__get__(None, cls)(*args, **kwargs)
            finally:
                state.custom_forward -= 1

        return apply

    def _ddp_params(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """DDP builds its reducer: the parameters it returns are those DDP's indices count."""
        state = self.state

        def build(ddp: Any) -> Any:
            params, sparse = original(ddp)
            state.registry.add_module(ddp.module)
            for name, param in ddp.module.named_parameters():
                state.watch_leaf(param, None, owner=(ddp.module, name))  # a model built before the trace
            state.ddp.wrapped(ddp, params, state.registry.key_of, len(state.events))
            return params, sparse

        return build

    def _ddp_forward(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """Count DDP forwards; keep DDP's unused-parameter error, raised here about the last iteration."""
        log, registry = self.state.ddp, self.state.registry

        def forward(ddp: Any, *args: Any, **kwargs: Any) -> Any:
            record = log.forward(ddp, len(self.state.events))
            try:
                return original(ddp, *args, **kwargs)
            except RuntimeError as error:
                frozen = frozenset(k for k in map(registry.key_of, ddp.parameters())
                                   if k is not None and not registry.all[k].tensor.requires_grad)
                log.error(error, user_site(1), record, frozen, in_forward=True)
                raise

        return forward

    def _optimizer_init(self, original: Callable[..., Any]) -> Callable[..., Any]:
        state = self.state

        def init(optimizer: Any, *args: Any, **kwargs: Any) -> None:
            original(optimizer, *args, **kwargs)
            if not state.in_trace_thread():
                return
            self._quiet_steps(type(optimizer))
            others = [other for other in state.optimizers if other.optimizer() is not None]
            record = state.optimizer_record(optimizer, user_site(1))
            record.created = state.steps
            for ref in record.params:
                param = ref()
                if param is not None and not param.requires_grad:
                    state.plain_attribute(param, record.site)
            for other in others:
                for ref in record.params:
                    param = ref()
                    key = state.registry.key_of(param)
                    if key is not None and other.holds(param):
                        # judged at the end: a warning only if both then step it (rebinding is silent)
                        state.events.record("optimizer", key, record.site, record.name, first=other.name,
                                            records=(other, record))

        return init

    def _from_numpy(self, original: Callable[..., Any]) -> Callable[..., Any]:
        state = self.state

        def from_numpy(array: Any) -> torch.Tensor:
            tensor = original(array)
            if state.taints and state.in_trace_thread():
                state.rewrap("torch.from_numpy()", array, tensor, user_site(1), False)
            return tensor

        return from_numpy

    def _variable(self, original: type) -> type:
        """A stand-in for the legacy ``Variable`` class: still matches ``isinstance``, and reports."""
        state = self.state

        class Variable(original):  # type: ignore[misc, valid-type]
            def __new__(cls, data: Any = None, *args: Any, requires_grad: bool = False, **kwargs: Any) -> Any:
                out = original(data, *args, requires_grad=requires_grad, **kwargs)
                if state.in_trace_thread():
                    state.rewrap("Variable()", data, out, user_site(1), requires_grad)
                return out

        return Variable


def _library_step(cls: type) -> bool:
    """Whether the ``step`` an optimizer class defines is torch's own code (not a user's)."""
    code = getattr(inspect.unwrap(cls.__dict__["step"]), "__code__", None)
    return code is not None and frame_kind(code.co_filename) == LIBRARY


class _CountingEngine:
    """Stands in for autograd's engine (``Variable._execution_engine``, through which every
    ``backward`` and ``autograd.grad`` runs): counts the passes started by threads the trace does
    not cover, and otherwise forwards everything unchanged."""

    def __init__(self, engine: Any, state: TraceState) -> None:
        self._engine = engine
        self._state = state

    def run_backward(self, *args: Any, **kwargs: Any) -> Any:
        state = self._state
        if not state.in_trace_thread() and state.pid == os.getpid():
            state.untraced_backward(threading.current_thread().name, user_site(1))
        return self._engine.run_backward(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def _user_located(show: Callable[..., Any]) -> Callable[..., Any]:
    """``warnings.showwarning`` that puts a torch warning raised under the interceptor at the user's line.

    Warnings from C++ name the innermost Python frame, which during a trace is the interceptor's.
    """

    def showwarning(message: Any, category: Any, filename: str, lineno: int, file: Any = None,
                    line: str | None = None) -> None:
        if frame_kind(filename) == OWN:
            site = user_site(1)
            if site is not None:
                filename, lineno, line = site.file, site.line, None
        show(message, category, filename, lineno, file, line)

    return showwarning
