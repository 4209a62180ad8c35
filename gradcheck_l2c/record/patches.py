"""The hooks and patches a trace installs besides its torch-function mode, each undone on exit.

- global parameter- and module-registration hooks: name parameters after the outermost module that
  holds them, and notice modules built inside another module's forward;
- ``Tensor.backward``: a plain tensor's backward goes to the interceptor without torch's generic dispatch;
- ``nn.Parameter.__new__``: notices a Parameter wrapped around a computed tensor;
- ``Optimizer.__init__``: remembers optimizers and where they were built; a global step pre-hook
  notes what each training step finds (tensors stepped without the gradient a cut kept from them, a
  ``step()`` whose gradients were all erased since the last backward); with ``--grad-stats``, a post-hook
  too, for the size of each step's update;
- ``zero_grad`` (noted where it ran) and torch's own optimizers' ``step()`` (without closure): run with the
  interceptor off the torch-function mode stack (or quiet, where a mode entered later is on top of it), since they touch every
  parameter and ``.grad`` and run no user code;
- torch.distributions' ``rsample`` and ``log_prob``: the log-probability of a distribution's own reparameterised
  sample, whose location's gradients cancel;
- ``torch.from_numpy``, the legacy ``Variable(...)`` and ``torch.Tensor(...)`` constructors (which
  torch-function modes do not see): values coming back in without their history;
- ``autograd.Function.apply``: a custom Function's forward runs without grad by design, no cut; and its
  ``__call__``: an old-style Function's instance called, which PyTorch refuses;
- ``warnings.showwarning``: torch's warnings point at the user's line, not at the interceptor;
- ``multiprocessing``'s ``Process.start``: where child processes, which run untraced, were started;
- autograd's engine: counts the backward passes of threads the trace does not cover, so the report
  says they ran unjudged;
- ``DistributedDataParallel``: which parameters it reduces, which modules each forward calls, its errors.

The hooks act only in the thread that started the trace (torch-function modes are per thread, and the
trace state is not shared between threads); in other threads they call straight through.
"""
from __future__ import annotations

import functools
import inspect
import sys
import warnings
import weakref
from multiprocessing.process import BaseProcess
from typing import Any, Callable

import torch
from torch import nn
from torch.nn.modules import module as module_hooks
from torch.optim.lr_scheduler import LRScheduler
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

from gradcheck_l2c.record import constructors, copies, grad_switch, reparameterised, wrappers
from gradcheck_l2c.record.bypass import ModuleBypass
from gradcheck_l2c.record.gradient_readers import module_hook_registration
from gradcheck_l2c.record.locations import LIBRARY, built_by, frame_kind, inside_forward, user_frame, user_site
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.torch_internals import (DDP_REDUCER_PARAMS, ENGINE_ATTRIBUTE, functions_off, is_compiling,
                                                  own_parameters, run_past)

#: torch's gradient clipping, run past the interceptor like torch's optimizer steps: ~10% of a transformer's step.
GRADIENT_CLIPPING = tuple((owner, name) for owner in (torch.nn.utils, torch.nn.utils.clip_grad)
                          for name in ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_")
                          if hasattr(owner, name))
#: A module's backward hooks: a hook that returns nothing only looks at the gradient (`GradientReaders`).
BACKWARD_HOOK_REGISTRATIONS = tuple(name for name in ("register_full_backward_hook", "register_backward_hook",
                                                      "register_full_backward_pre_hook") if hasattr(nn.Module, name))


class Patches:
    """Installs everything on ``install()``; ``restore()`` puts back exactly what was there."""

    def __init__(self, state: TraceState, mode: Any) -> None:
        self.state = state
        self.mode = mode  # the trace's interceptor, which torch's own optimizer code runs past
        self._undo: list[Callable[[], None]] = []
        self._parents: list[nn.Module] = []  # the modules whose forward is running, outermost first
        self._child_names: dict[tuple[int, int], str] = {}  # (id(parent), id(child)) -> attribute
        self._quieted: set[type] = set()  # optimizer classes whose step() was looked at
        self.bypass = ModuleBypass(state, mode)  # torch's layers past the mode, once seen to record nothing

    def install(self) -> None:
        for register, hook in ((module_hooks.register_module_parameter_registration_hook, self._on_parameter),
                               (module_hooks.register_module_buffer_registration_hook, self._on_buffer),
                               (module_hooks.register_module_module_registration_hook, self._on_submodule)):
            self._undo.append(register(hook).remove)
        if self.state.scope.record_sites:
            self._undo.append(module_hooks.register_module_forward_pre_hook(self._enter_module).remove)
            self._undo.append(module_hooks.register_module_forward_hook(self._leave_module, always_call=True).remove)
        self._undo.append(register_optimizer_step_pre_hook(self._before_step).remove)
        if self.state.grad_stats is not None:  # --grad-stats: each step's update beside its weight
            self._undo.append(register_optimizer_step_post_hook(self._after_step).remove)
        self._replace(torch.optim.Optimizer, "zero_grad",
                      wrappers.clearing(self.state, self._quietly(torch.optim.Optimizer.zero_grad)))
        self._replace(nn.Module, "zero_grad", wrappers.clearing(self.state, self._quietly(nn.Module.zero_grad)))
        self._replace(nn.Module, "load_state_dict", copies.state_loading(self.state, nn.Module.load_state_dict))
        for name in BACKWARD_HOOK_REGISTRATIONS:  # hooks that only look at a gradient: Grad-CAM's
            self._replace(nn.Module, name, module_hook_registration(self.state.optimizers.readers,
                                                                    getattr(nn.Module, name)))
        for owner, name in GRADIENT_CLIPPING:  # they read and scale .grad only, under no_grad
            self._replace(owner, name, wrappers.clipping(self.state, self._quietly(getattr(owner, name))))
        engine_owner = torch.autograd.variable.Variable  # before it is replaced below
        self._replace(engine_owner, ENGINE_ATTRIBUTE,
                      wrappers.CountingEngine(getattr(engine_owner, ENGINE_ATTRIBUTE), self.state))
        self._replace_attribute(torch.Tensor, "backward", wrappers.tensor_backward(self.mode, torch.Tensor.backward))
        self._replace(nn.Parameter, "__new__", staticmethod(wrappers.parameter_new(self.state, nn.Parameter.__new__)))
        self._replace(nn.Module, "__setattr__", wrappers.module_setattr(self.state, nn.Module.__setattr__,
                                                                        self.bypass.attribute_set))
        if not self.state.scope.record_sites and self.state.health is None:  # both look at every op
            self._replace(nn.Module, "__call__", self.bypass.wrap(nn.Module.__call__))
        self._replace(torch.optim.Optimizer, "__init__",
                      wrappers.optimizer_init(self.state, torch.optim.Optimizer.__init__, self._quiet_steps))
        self._replace(LRScheduler, "__init__", wrappers.scheduler_init(self.state, LRScheduler.__init__))
        self._replace(LRScheduler, "step", wrappers.scheduler_step(self.state, LRScheduler.step))
        self._replace(torch, "from_numpy", constructors.from_numpy(self.state, torch.from_numpy))
        reparameterised.install(self.state, self._replace)  # log_prob(rsample()) of one distribution
        grad_switch.install(self.state, self._replace)  # torch.set_grad_enabled(False) left on
        _shadow(self._undo, torch.Tensor, "__new__", staticmethod(constructors.tensor_new(self.state, torch.Tensor.__new__)))
        variable = constructors.variable(self.state, torch.autograd.variable.Variable)
        self._replace(torch.autograd, "Variable", variable)
        self._replace(torch.autograd.variable, "Variable", variable)
        apply = wrappers.function_apply(self.state, torch.autograd.Function.__dict__["apply"])
        self._replace(torch.autograd.Function, "apply", classmethod(apply))
        function_call = torch.autograd.Function.__dict__["__call__"]  # an old-style Function's instance called
        self._replace(torch.autograd.Function, "__call__", wrappers.legacy_call(self.state, function_call))
        _keep_dynamo_out(apply, self._replace)
        self._replace_attribute(warnings, "showwarning", wrappers.user_located(warnings.showwarning))
        self._replace(BaseProcess, "start", wrappers.process_start(self.state.scope, BaseProcess.start))
        if torch.distributed.is_available():
            from torch.nn.parallel import DistributedDataParallel as DDP

            self._undo.append(self.state.ddp.remove_hooks)
            self._replace(DDP, DDP_REDUCER_PARAMS, wrappers.ddp_params(self.state, getattr(DDP, DDP_REDUCER_PARAMS)))
            self._replace(DDP, "forward", wrappers.ddp_forward(self.state, DDP.forward))

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
        state = self.state
        state.registry.changes += 1  # the names of the module's tensors may change
        if param is None or not state.scope.in_trace_thread():
            return
        frame = user_frame(1)
        outer = inside_forward(frame.f_back if frame is not None else None, besides=module)
        if outer is not None:
            _built_in_forward(state, module, outer)
            return
        state.registry.add_module(module)
        with functions_off():  # the tool's reads of the parameter, past the interceptor: not the script's
            state.registry.watch_leaf(param, user_site(1), owner=(module, name))
        state.registry.user_leaves.pop(id(param), None)  # a module's parameter, used by name in forward

    def _on_buffer(self, module: nn.Module, name: str, buffer: Any) -> None:
        """``register_buffer`` given a tensor that requires grad (a Parameter): parameters() will not hold it. Any
        other buffer user code registers keeps its line, as a plain tensor attribute set there does (the line to change
        if the script then treats it as learnable)."""
        self.state.unregistered.buffers_registered += 1
        if not isinstance(buffer, torch.Tensor) or not self.state.scope.in_trace_thread():
            return
        with functions_off():  # the tool's read of the buffer, past the interceptor
            if buffer.requires_grad:
                self.state.unregistered.buffered(self.state.registry, module, name, buffer, user_site(1))
            elif _registered_by_user(sys._getframe(1)):
                self.state.registry.assigned[(id(module), name)] = (weakref.ref(module), user_site(1))

    def _enter_module(self, module: nn.Module, args: Any) -> None:
        """Track which module's forward runs, so drawn nodes can be grouped by module (not while dynamo
        compiles the forward: the hook would become part of the compiled code)."""
        if not self.state.scope.in_trace_thread() or is_compiling():
            return
        path = self.state.scope.module_path
        parent = path[-1] if path else None
        name = type(module).__name__
        if parent is not None:
            name = parent + "." + (self._child_names.get((id(self._parents[-1]), id(module))) or name)
        path.append(name)
        self._parents.append(module)

    def _leave_module(self, module: nn.Module, args: Any, output: Any) -> None:
        if not is_compiling() and self._parents and self._parents[-1] is module and self.state.scope.in_trace_thread():
            self._parents.pop()
            self.state.scope.module_path.pop()

    def _on_submodule(self, parent: nn.Module, name: str, child: Any) -> None:
        """A module gets a submodule: remember the parent, so parameters are named from the outermost (and what
        the bypass learnt of module calls may no longer hold)."""
        self.bypass.changed()
        self.state.registry.changes += 1
        if child is not None and self.state.scope.in_trace_thread() and inside_forward(user_frame(1)) is None:
            self.state.registry.add_module(parent)
            self._child_names[(id(parent), id(child))] = name

    def _before_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """Note what the training step finds; then, for torch's own optimizers stepping without a closure
        (which would run user code), let their updates run past the interceptor: nothing there can cut a path."""
        if not self.state.scope.in_trace_thread() or is_compiling():
            return
        self.state.optimizers.step(optimizer, user_site(1), closure=len(args) > 1 or kwargs.get("closure") is not None)
        if self.state.grad_stats is not None:
            self.state.grad_stats.before_step(optimizer)
        self._quiet_steps(type(optimizer))

    def _after_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        """``--grad-stats``: the step ended; the size of its update."""
        if self.state.scope.in_trace_thread() and not is_compiling():
            self.state.grad_stats.after_step(optimizer)

    def _quiet_steps(self, cls: type) -> None:
        """From now on, ``cls.step()`` without a closure runs past the interceptor when it is torch's own
        code: its updates cannot cut a path, and they were most of a small model's tracing cost."""
        if cls in self._quieted:
            return
        self._quieted.add(cls)
        owner = next((c for c in cls.__mro__ if "step" in c.__dict__), None)  # AdamW steps with Adam's step()
        if owner is None or owner is torch.optim.Optimizer or owner is not cls and owner in self._quieted:
            return
        self._quieted.add(owner)
        if _library_step(owner):
            self._replace(owner, "step", self._quietly(owner.__dict__["step"], steps=True))

    def _quietly(self, original: Callable[..., Any], steps: bool = False) -> Callable[..., Any]:
        """``original`` (torch's ``zero_grad``, clipping, a step) run past the interceptor (or with it quiet): it reads and
        writes parameters and ``.grad``, no user code — unless a step has a closure or is differentiable."""
        state = self.state

        @functools.wraps(original)
        def quietly(*args: Any, **kwargs: Any) -> Any:
            if not state.scope.in_trace_thread() or (steps and (len(args) > 1 or kwargs or args[0].defaults.get(
                    "differentiable", False))):
                return original(*args, **kwargs)
            scope = state.scope
            before, scope.quiet = scope.quiet, True
            try:
                return run_past(self.mode, original, *args, **kwargs)
            finally:
                scope.quiet = before

        return quietly


def _keep_dynamo_out(apply: Callable[..., Any], replace: Callable[[Any, str, Any], None]) -> None:
    """dynamo compiles the Python frames a compiled call reaches after a graph break (a module's backward hooks
    call ``BackwardHookFunction.apply``), and fails inside the stand-in for ``Function.apply``, where torch's own
    apply is C code it never sees as a frame. Once dynamo is loaded (now, or by the first ``torch.compile`` of
    the trace: it loads dynamo, which costs a second), dynamo leaves the stand-in's own frame alone, as it never
    sees torch's; the Function's ``forward`` it calls is dynamo's to compile or not, as untraced."""
    def shield() -> None:
        torch.autograd.Function.apply = classmethod(torch.compiler.disable(apply, recursive=False))

    if "torch._dynamo" in sys.modules:
        shield()
        return
    compile_ = torch.compile

    @functools.wraps(compile_)
    def compile_shielding(*args: Any, **kwargs: Any) -> Any:
        if torch.autograd.Function.__dict__["apply"].__func__ is apply:
            shield()
        return compile_(*args, **kwargs)

    replace(torch, "compile", compile_shielding)


def _shadow(undo: list[Callable[[], Any]], owner: Any, name: str, value: Any) -> None:
    """Set ``owner.name`` where it is only inherited; the undo, registered first, deletes it so the inherited one
    shows again."""
    undo.append(lambda: owner.__dict__.get(name) is value and delattr(owner, name))
    setattr(owner, name, value)


def _registered_by_user(frame: Any) -> bool:
    """Whether the ``register_buffer`` call running at or above ``frame`` was made by user code."""
    while frame is not None and frame.f_code.co_name != "register_buffer":
        frame = frame.f_back
    caller = frame.f_back if frame is not None else None
    return caller is not None and frame_kind(caller.f_code.co_filename) != LIBRARY


def _library_step(cls: type) -> bool:
    """Whether the ``step`` an optimizer class defines is torch's own code (not a user's)."""
    code = getattr(inspect.unwrap(cls.__dict__["step"]), "__code__", None)
    return code is not None and frame_kind(code.co_filename) == LIBRARY


def _built_in_forward(state: TraceState, module: nn.Module, outer: str) -> None:
    """A module made inside another module's ``forward``: told once per module, not once per parameter, with how many
    optimizers had been built then (one made once before any optimizer may be a lazy build). Told at the line that
    asked for it, and as the module built there: a module of the user's whose ``__init__`` makes the layers is the one
    to move, not its ``nn.Linear`` (`locations.built_by`)."""
    if not own_parameters(module):
        site, built = built_by(1)
        state.events.record("module_in_forward", -1, site or user_site(1), type(built or module).__name__,
                            outer=outer, built_after=state.clock.optimizers)
