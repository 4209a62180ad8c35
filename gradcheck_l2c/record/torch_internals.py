"""Every torch internal the tracer relies on, in one place, each with the reason it is needed.

torch documents none of these as stable; each exists from torch 2.1 to 2.14. Should one move, this is the
only module to change, and a torch that changed one breaks the report, never the traced script's results.
``tests/packaging/test_torch_api.py`` fails on a private torch name used anywhere else, or used here
without being listed in :data:`PRIVATE_NAMES` or :data:`PRIVATE_ATTRIBUTES`.
"""
from __future__ import annotations

import hashlib
from collections import OrderedDict
from types import CodeType
from typing import Any, Callable

import torch
from torch.overrides import _get_current_function_mode_stack, has_torch_function_unary
from torch.utils.hooks import RemovableHandle

#: The private names read here, and why.
PRIVATE_NAMES: dict[str, str] = {
    "torch._C.DisableTorchFunction": "the tool's own tensor reads (.grad, .any()) and the judging run past the "
                                     "interceptor",
    "torch.overrides._get_current_function_mode_stack": "whether the tracer's mode is still on the stack, so "
                                                        "that an interrupted exit can run again",
    "torch._C._pop_torch_function_stack": "torch's own optimizer code (zero_grad, a step) runs with the tracer's mode "
                                          "off the stack, as it would untraced",
    "torch._C._push_on_torch_function_stack": "puts the tracer's mode back on the stack after that code",
    "torch._C._len_torch_function_stack": "whether the tracer's mode is the innermost, read per module call "
                                          "without building the stack's list",
    "torch._C._get_function_stack_at": "the innermost mode, read the same way",
    "torch.autograd.graph._engine_run_backward": "the engine call ``autograd.backward`` ends in, made by the "
                                                  "traced backward of a plain scalar (`run_backward`)",
    "torch.autograd._make_grads": "part of what that call skips: its code is fingerprinted with the others",
    "torch._C._are_functorch_transforms_active": "``autograd.backward`` refuses to run inside a functorch "
                                                 "transform: that case runs torch's own way",
    "torch.nn.modules.module._global_forward_hooks": "a global forward hook runs code of its own inside every "
                                                     "module call: torch's layers then keep the tracer's mode",
    "torch.nn.modules.module._global_forward_pre_hooks": "the same for global forward pre-hooks",
    "torch.nn.modules.module._global_backward_hooks": "a global backward hook makes every module call wrap its "
                                                      "results: torch's layers under one that runs past the mode "
                                                      "are then called through nn.Module.__call__",
    "torch.nn.modules.module._global_backward_pre_hooks": "the same for global backward pre-hooks",
    "torch._C._get_tracing_state": "a TorchScript trace running makes every module call record a scope: likewise; "
                                   "and records every op run meanwhile, the tool's own too, into its graph",
    "torch._C._set_grad_enabled": "--nan's check after every op turns gradients off in one call, without "
                                  "building a context manager",
    "torch._foreach_norm": "--grad-stats takes the norms of every gradient and weight in one call per backward",
    "torch._foreach_neg": "--grad-stats copies the weights an optimizer step holds in one call before the step",
    "torch._foreach_add_": "--grad-stats takes the step's change of those weights in one call after it",
    "torch.compiler._is_compiling_flag": "whether dynamo is tracing a compiled region, read per op without a call "
                                         "(torch.compiler.is_compiling() reads it after a TorchScript check)",
}
def compiling_check() -> Any:
    """A no-argument test of whether dynamo is tracing a compiled region, the cheapest this torch offers."""
    compiler = torch.compiler
    if hasattr(compiler, "_is_compiling_flag"):
        return lambda: compiler._is_compiling_flag
    return compiler.is_compiling


#: `compiling_check`'s test, read by the interceptor at every op and by the patches at every step.
is_compiling = compiling_check()
#: The TorchScript tracer's state while ``torch.jit.trace`` (or the TorchScript ONNX exporter) runs, else None.
tracing_state = torch._C._get_tracing_state


#: Internal attributes of torch objects (not module-level names), and why.
PRIVATE_ATTRIBUTES: dict[str, str] = {
    "_execution_engine": "autograd's engine on torch.autograd.variable.Variable, through which every backward of "
                         "every thread runs (counting the passes of threads the trace does not cover)",
    "_build_params_for_reducer": "DistributedDataParallel's parameters in the order of the indices its errors print",
    "_version": "a tensor's in-place write counter: autograd's own test for stale saved tensors",
    "_saved_": "prefix of an autograd node's saved tensors (reading a stale one tells which node saved it)",
    "_parameters": "the parameters a module registered itself, without its submodules'",
    "_buffers": "the buffers a module registered itself: with the parameters, what a layer's ops read besides its "
                "inputs (a call with gradients off cuts nothing when none of them requires grad)",
    "_save_to_state_dict": "on the stack: a detach is a state_dict() read",
    "_load_from_state_dict": "on the stack: a copy_ is a load_state_dict() write",
    "_apply": "on the stack: .to()/.half() writes results back into the same parameters",
    "_call_impl": "on the stack: a module's forward is running",
    "_compiled_call_impl": "module.compile()'s compiled call, which nn.Module.__call__ runs instead of forward: "
                           "torch's layers under one that runs past the mode are called straight only without it",
    "_forward_hooks": "a module's own forward hooks: code that runs inside its call",
    "_forward_pre_hooks": "a module's own forward pre-hooks, likewise",
    "_backward_hooks": "a module's own backward hooks, likewise; and a tensor's, where a hook PyTorch's error names is "
                       "looked for",
    "_backward_pre_hooks": "a module's own backward pre-hooks, likewise",
    "_is_view": "whether a tensor is a view: autograd refuses some in-place writes into views",
    "_post_accumulate_grad_hooks": "a tensor's post-accumulate-grad hooks, in the order they run: the tool's runs "
                                   "first, before a user's that steps and clears .grad (an optimizer fused into "
                                   "the backward, set up before the trace)",
    "_is_param": "the flag that makes a tensor of another class an nn.Parameter to isinstance: read directly for a "
                 "plain tensor, past Parameter's Python-level instance check, at every leaf the trace watches",
    "_sequence_nr": "the order autograd nodes were made in: a node made before the last backward that freed its graph "
                    "belongs to that freed graph (\"backward through the graph a second time\")",
    "_lineno_map": "which node of a torch.compile'd graph (torch.fx GraphModule) a line of its generated code runs: "
                   "a cut there is shown at the user's line that node came from",
    "_forward_cls": "the autograd.Function class behind a custom backward node, whose backward returned the wrong "
                    "gradients",
    "_input_metadata": "the shape of the value an autograd node's forward made: which term of a loss that backward "
                       "refused as not scalar brought the extra values in",
}

#: Switches torch-function modes off while it is entered: the tool's own reads are not the user's.
functions_off = torch._C.DisableTorchFunction

ENGINE_ATTRIBUTE = "_execution_engine"
DDP_REDUCER_PARAMS = "_build_params_for_reducer"
SAVED_PREFIX = "_saved_"
STATE_DICT_SAVE = "_save_to_state_dict"
STATE_DICT_LOAD = "_load_from_state_dict"
MODULE_APPLY = "_apply"
MODULE_CALLS = ("_call_impl", "_wrapped_call_impl", "calling_module")  # the last: `bypass.ModuleBypass.wrap`


def mode_stack() -> list[Any]:
    """The torch-function modes active now, outermost first."""
    return list(_get_current_function_mode_stack())


#: How many torch-function modes are active, and the one at an index (0: the outermost): the innermost read per
#: module call without building the stack's list (`bypass.ModuleBypass`).
stack_length = torch._C._len_torch_function_stack
stack_at = torch._C._get_function_stack_at
#: Take the innermost torch-function mode off the stack, and put one back on (`bypass.ModuleBypass`).
pop_mode = torch._C._pop_torch_function_stack
push_mode = torch._C._push_on_torch_function_stack


def hook_tables(module: torch.nn.Module) -> tuple[dict, dict, dict, dict]:
    """A module's own forward and backward hook tables (code that runs inside its call): the same dicts for the
    module's life, unless an attribute assignment replaces one."""
    return module._forward_hooks, module._forward_pre_hooks, module._backward_hooks, module._backward_pre_hooks


def tensor_hook_tables(tensor: torch.Tensor) -> tuple[dict, ...]:
    """A tensor's own gradient hooks and post-accumulate hooks (None until one is registered: left out)."""
    return tuple(table for table in (tensor._backward_hooks, tensor._post_accumulate_grad_hooks) if table)


def global_backward_hook_tables() -> tuple[dict, dict]:
    """The backward hooks and pre-hooks registered for every module (``register_module_full_backward_hook``)."""
    hooks = torch.nn.modules.module
    return hooks._global_backward_hooks, hooks._global_backward_pre_hooks


def global_forward_hooks() -> bool:
    """Whether any global forward hook or pre-hook is registered (``register_module_forward_hook``)."""
    hooks = torch.nn.modules.module
    return bool(hooks._global_forward_hooks or hooks._global_forward_pre_hooks)


def calls_go_to_forward() -> bool:
    """Whether ``nn.Module.__call__`` now goes straight to ``forward`` for an uncompiled module without hooks of
    its own: no global module hook (forward or backward) and no TorchScript trace running (torch's ``_call_impl``
    tests exactly these)."""
    hooks = torch.nn.modules.module
    return not (global_forward_hooks() or hooks._global_backward_hooks or hooks._global_backward_pre_hooks
                or tracing_state())


def compiled(module: torch.nn.Module) -> bool:
    """Whether ``module.compile()`` gave the module a compiled call (set by assignment: `Module.__setattr__`)."""
    return module._compiled_call_impl is not None


def has_post_accumulate_hooks(tensor: torch.Tensor) -> bool:
    """Whether any post-accumulate-grad hook is registered on ``tensor``."""
    return bool(tensor._post_accumulate_grad_hooks)


def hook_first(tensor: torch.Tensor, hook: Callable[[torch.Tensor], None]) -> RemovableHandle:
    """Register a post-accumulate-grad hook on the leaf ``tensor`` to run before its others: autograd runs them in
    the order of the dict underneath (not the OrderedDict's own), so the others are put back after it, under the
    same ids (their handles still remove them). A leaf without hooks (a fresh one at every step) gets its dict
    here, as ``Tensor.register_post_accumulate_grad_hook`` makes it, without that method's checks and import."""
    if tensor._post_accumulate_grad_hooks is None:
        hooks = tensor._post_accumulate_grad_hooks = OrderedDict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle
    handle = tensor.register_post_accumulate_grad_hook(hook)
    hooks = tensor._post_accumulate_grad_hooks
    if len(hooks) > 1:
        others = [(ident, hook) for ident, hook in hooks.items() if ident != handle.id]
        for ident, _ in others:
            del hooks[ident]
        hooks.update(others)
    return handle


def is_view(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is a view of another."""
    return tensor._is_view()


def innermost_mode_is(mode: Any) -> bool:
    """Whether ``mode`` is the innermost torch-function mode active now (read without building the stack's list)."""
    depth = stack_length()
    return bool(depth) and stack_at(depth - 1) is mode


def run_past(mode: Any, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` with ``mode`` off the torch-function mode stack when it is the innermost mode
    and dynamo is not compiling: torch's own optimizer code then runs as it would untraced, without a call into
    the mode per tensor read (`patches.Patches._quietly`). Else with the stack as it is."""
    if is_compiling() or not innermost_mode_is(mode):
        return function(*args, **kwargs)
    pop_mode()
    try:
        return function(*args, **kwargs)
    finally:
        push_mode(mode)


def version(tensor: torch.Tensor) -> int:
    """The tensor's in-place write counter; -1 for an inference tensor, which has none (reading it raises)."""
    return -1 if tensor.is_inference() else tensor._version


#: The mark of a leaf without a gradient (`grad_marks`).
NO_GRAD: tuple[None, int] = (None, -1)


def grad_marks(tensors: list[torch.Tensor]) -> list[tuple[Any, int]]:
    """Each leaf's ``.grad`` and that gradient's in-place write counter (`NO_GRAD` without one): a backward that gives
    a leaf its gradient sets a new one or writes into the one there (`grads_changed`). Read past any torch-function
    mode: the tool's reads, not the user's."""
    with functions_off():
        return [NO_GRAD if (grad := tensor.grad) is None else (grad, version(grad)) for tensor in tensors]


def grads_changed(tensors: list[torch.Tensor], marks: list[tuple[Any, int]]) -> list[int]:
    """The positions of the leaves whose gradient was set, or written into, since ``marks`` (`grad_marks`); the write
    counter is read only of a gradient still the same tensor (a step's ``zero_grad()`` leaves none to read)."""
    with functions_off():
        return [index for index, (tensor, (old, count)) in enumerate(zip(tensors, marks))
                if (grad := tensor.grad) is not None and (grad is not old or version(grad) != count)]


def hooked_or_gone(tensors: list[torch.Tensor | None]) -> list[int]:
    """The positions of the leaves that are gone (None) or carry a post-accumulate-grad hook."""
    return [index for index, tensor in enumerate(tensors) if tensor is None or tensor._post_accumulate_grad_hooks]


def is_parameter(tensor: torch.Tensor) -> bool:
    """``isinstance(tensor, nn.Parameter)``, without Parameter's Python-level instance check for a plain tensor."""
    if type(tensor) is torch.Tensor:
        return bool(getattr(tensor, "_is_param", False))
    return isinstance(tensor, torch.nn.Parameter)


def sequence_nr(node: Any) -> int | None:
    """The order in which autograd made ``node`` (per thread); None where torch does not tell."""
    try:
        return node._sequence_nr()
    except (AttributeError, RuntimeError):
        return None


def output_shape(node: Any) -> tuple[int, ...] | None:
    """The shape of the (first) value the forward of ``node`` made; None where torch does not tell."""
    try:
        return tuple(node._input_metadata[0].shape)
    except (AttributeError, IndexError, RuntimeError, TypeError):
        return None


def function_class(node: Any) -> Any:
    """The ``autograd.Function`` subclass whose backward a custom node runs, or None for torch's own nodes."""
    return getattr(type(node), "_forward_cls", None)


#: The file names torch.fx gives the code it generates for a graph (what torch.compile runs with backend="eager").
FX_GENERATED = "<eval_with_key>"


def fx_node_trace(frame: Any) -> str | None:
    """The stack trace recorded for the graph node a frame of fx-generated code (``FX_GENERATED``) is running:
    the lines of user code the node was traced from; None where torch recorded none."""
    module = frame.f_locals.get("self")
    lines = getattr(module, "_lineno_map", None)
    if not lines:
        return None
    index = lines.get(frame.f_lineno - frame.f_code.co_firstlineno)
    graph = getattr(module, "graph", None)
    if index is None or graph is None:
        return None
    for position, node in enumerate(graph.nodes):
        if position == index:
            return node.meta.get("stack_trace")
    return None


def own_parameters(module: torch.nn.Module) -> dict[str, Any]:
    """The parameters a module registered itself."""
    return module._parameters


def weight_tables(module: torch.nn.Module) -> tuple[dict, dict]:
    """A module's own parameters and buffers, by name: the same dicts for the module's life (``functional_call``
    swaps the tensors inside them), unless an attribute assignment replaces one."""
    return module._parameters, module._buffers


#: Turns grad mode on or off in one call: ``--nan``'s check after every op runs with gradients off.
set_grad_enabled = torch._C._set_grad_enabled

#: The norm of each tensor of a list in one call: ``--grad-stats``'s per-backward gradient and weight norms.
foreach_norm = torch._foreach_norm
#: ``--grad-stats``'s update per optimizer step: the weights negated (a copy) in one call before the step, and
#: the weights after it added to that copy in one call (their change).
foreach_neg = torch._foreach_neg
foreach_add_ = torch._foreach_add_


def _fingerprint(*codes: CodeType) -> str:
    """What the given functions call and the constants they use (their docstrings aside), in a short digest."""
    described = [(code.co_names, [c for c in code.co_consts[1:] if not isinstance(c, CodeType)]) for code in codes]
    return hashlib.sha256(repr(described).encode()).hexdigest()[:16]


#: torch's ``Tensor.backward`` and ``autograd.backward``, as torch defines them when this module is imported (a
#: script may replace either later: checked at every call).
TENSOR_BACKWARD = torch.Tensor.backward
_autograd_backward = torch.autograd.backward
#: The fingerprints of ``Tensor.backward``, ``autograd.backward`` and ``_make_grads`` on the torch versions whose
#: code `run_backward` was checked against (2.13, 2.14); any other torch runs every backward its own way.
CHECKED_BACKWARDS = frozenset({"4dfa4e6e7a41aa64"})
BACKWARD_FINGERPRINT = _fingerprint(TENSOR_BACKWARD.__code__, _autograd_backward.__code__,
                                    torch.autograd._make_grads.__code__)
BACKWARD_CHECKED = BACKWARD_FINGERPRINT in CHECKED_BACKWARDS
_run_engine = torch.autograd.graph._engine_run_backward
_Tensor, _ones_like, _PRESERVE = torch.Tensor, torch.ones_like, torch.preserve_format
_functorch_on = torch._C._are_functorch_transforms_active
_BACKWARD_KEYWORDS = frozenset(("gradient", "retain_graph", "create_graph", "inputs"))


def run_backward(func: Any, args: tuple, kwargs: dict) -> Any:
    """``func(*args, **kwargs)``. For torch's ``Tensor.backward`` of a plain real one-element tensor that requires
    grad, with no gradient, inputs or create_graph given, no torch function left to hand it to and no functorch
    transform: the engine call ``autograd.backward`` makes of it (its implicit gradient of ones, the same arguments)
    without that function's argument handling, about 30 µs of Python a backward (a loop that steps a small model
    pays it at every step). Only on a torch whose code for it was checked (`CHECKED_BACKWARDS`)."""
    if func is TENSOR_BACKWARD and BACKWARD_CHECKED and len(args) == 1 and kwargs.keys() <= _BACKWARD_KEYWORDS:
        tensor, retain = args[0], kwargs.get("retain_graph")
        if (type(tensor) is _Tensor and kwargs.get("gradient") is None and kwargs.get("inputs") is None
                and kwargs.get("create_graph", False) is False and (retain is None or type(retain) is bool)
                and torch.autograd.backward is _autograd_backward and tensor.requires_grad
                and not has_torch_function_unary(tensor) and not tensor.is_nested
                and tensor.dtype.is_floating_point and tensor.numel() == 1 and not _functorch_on()):
            _run_engine((tensor,), (_ones_like(tensor, memory_format=_PRESERVE),), bool(retain), False, (),
                        allow_unreachable=True, accumulate_grad=True)
            return None
    return func(*args, **kwargs)
