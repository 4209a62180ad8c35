"""Whether a module's ``forward`` is straight-line code that calls only torch: no branch, no loop, no state of its own.

Such a forward makes the same torch calls, in the same order, on every call: what it does with autograd is decided
by its inputs and its layers, as for torch's own layers, so `bypass.ModuleBypass` may learn its calls the same way.
It reads from ``self`` only its submodules, parameters, buffers, ``training`` and constants set on it (``self.hidden
= 64``: setting them again forgets what was learnt); its globals are torch's modules and functions and a few pure
builtins; it stores nothing outside its locals. Anything else (an ``if``, a ``for``, ``self.helper(x)``, a global or
a class of the user's, a list on ``self``, a closure, a ``with`` block) makes its calls depend on more than its
inputs, and it keeps going through the mode.
"""
from __future__ import annotations

import builtins
import dis
import types
from typing import Any

import torch
from torch import nn

#: Instructions that only move values between the stack, locals and constants, call, or compute.
_PLAIN = frozenset((
    "RESUME", "NOP", "CACHE", "EXTENDED_ARG", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST", "STORE_FAST",
    "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "LOAD_CONST", "LOAD_SMALL_INT", "PRECALL", "CALL", "CALL_KW",
    "KW_NAMES", "PUSH_NULL", "CALL_FUNCTION_EX", "CALL_INTRINSIC_1", "BINARY_OP", "BINARY_SUBSCR", "BINARY_SLICE",
    "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "BUILD_SLICE", "BUILD_CONST_KEY_MAP", "LIST_EXTEND", "DICT_MERGE",
    "UNARY_NEGATIVE", "UNARY_INVERT", "COMPARE_OP", "UNPACK_SEQUENCE", "RETURN_VALUE", "RETURN_CONST", "POP_TOP",
    "COPY", "SWAP", "FORMAT_VALUE", "FORMAT_SIMPLE", "CONVERT_VALUE", "BUILD_STRING",
))
#: Builtins that compute from their arguments only (not ``getattr``, ``setattr``, ``globals``, ``iter``...).
_PURE_BUILTINS = frozenset((len, min, max, abs, sum, isinstance, print))
_verdicts: dict[Any, tuple[tuple[str, ...], ...] | None] = {}  # forward -> the chains it reads from self


def straight_forward(module: nn.Module) -> bool:
    """Whether ``module``'s class ``forward`` is straight-line code calling only torch, reading from ``module``
    only its submodules, parameters, buffers, ``training`` and constants."""
    chains = _chains_of(type(module))
    return chains is not None and all(_reads_layers(module, chain) for chain in chains)


def straight_class(cls: type) -> bool:
    """Whether the ``forward`` of ``cls`` is straight-line code calling only torch (whatever its instances hold)."""
    return _chains_of(cls) is not None


def _chains_of(cls: type) -> tuple[tuple[str, ...], ...] | None:
    forward = getattr(cls, "forward", None)
    try:
        return _verdicts[forward]
    except KeyError:
        chains = _verdicts[forward] = _self_chains(forward)
        return chains
    except TypeError:  # an unhashable forward
        return None


def _self_chains(forward: Any) -> tuple[tuple[str, ...], ...] | None:
    """The attribute chains ``forward`` reads from its first argument (``self.block.conv``), or None when it is not
    straight-line code calling only torch."""
    if type(forward) is not types.FunctionType or forward.__closure__ or forward.__code__.co_argcount < 1:
        return None
    code = forward.__code__
    if code.co_flags & (0x20 | 0x80 | 0x100 | 0x200):  # generator, coroutine, iterable coroutine, async generator
        return None
    owner = code.co_varnames[0]
    chains: list[tuple[str, ...]] = []
    chain: list[str] | None = None  # the chain being read from self, if the last instructions read one
    for instruction in dis.get_instructions(code):
        name, value = instruction.opname, instruction.argval
        if chain is not None and name in ("LOAD_ATTR", "LOAD_METHOD"):
            chain.append(value)
            continue
        if chain is not None:
            chains.append(tuple(chain))
            chain = None
        if name in ("LOAD_FAST", "LOAD_FAST_CHECK") and value == owner:
            chain = []
        elif name == "LOAD_GLOBAL":
            if not _torch_or_pure(forward.__globals__.get(value, getattr(builtins, value, None))):
                return None
        elif name not in ("LOAD_ATTR", "LOAD_METHOD"):  # an attribute of a local, a result or a torch module
            if name not in _PLAIN or (owner == value or isinstance(value, tuple) and owner in value):
                return None  # a branch, a store outside the locals, or `self` handled some other way
    if chain is not None:
        chains.append(tuple(chain))
    return tuple(chains) if all(chains) else None  # `self` used bare (passed on, returned): not straight


def _torch_or_pure(value: Any) -> bool:
    """A global a straight forward may use: one of torch's modules or functions, or a pure builtin."""
    if isinstance(value, types.ModuleType):
        return value.__name__ == "torch" or value.__name__.startswith("torch.")
    if isinstance(value, type):
        return False  # a class: building a layer or a Function of the user's inside forward
    if type(value) is types.BuiltinFunctionType and getattr(value, "__self__", None) is builtins:
        return value in _PURE_BUILTINS
    module = getattr(value, "__module__", None) or ""
    return callable(value) and (module == "torch" or module.startswith("torch."))


_UNSET = object()


def _constant(value: Any) -> bool:
    """A number, string, None, or a tuple of those: a value that changes only when the attribute is set again."""
    if type(value) is tuple:
        return all(map(_constant, value))
    return value is None or type(value) in (bool, int, float, str)


def _reads_layers(module: nn.Module, chain: tuple[str, ...]) -> bool:
    """Whether ``module.<chain>`` is one of its submodules, parameters or buffers (or a method of one of those
    tensors), its ``training`` flag, or a constant set on it (``self.hidden = 64``)."""
    value: Any = module
    for position, name in enumerate(chain):
        last = position == len(chain) - 1
        if name == "training" and last:
            return True
        if last and _constant(value.__dict__.get(name, _UNSET)):
            return True  # set on the instance: a change goes through Module.__setattr__, which forgets what was learnt
        found = getattr(value, name, None)
        if isinstance(found, torch.Tensor):  # what follows are the tensor's own methods (``self.weight.t()``)
            return isinstance(found, nn.Parameter) or any(found is buffer for buffer in value.buffers(recurse=False))
        if not isinstance(found, nn.Module):
            return False
        value = found
    return True
