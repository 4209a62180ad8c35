"""What the statements on a line of compiled user code do, read from its code object (never its text): the
lines of a function's ``return``s, the lines that store a value as an attribute of an object, those that bind
a name, the names a line reads, the attribute or named item an instruction reads a value through, and the lines a
function runs itself."""
from __future__ import annotations

import dis
import functools
from collections.abc import Iterator
from types import CodeType

_RETURNS = frozenset(("RETURN_VALUE", "RETURN_CONST"))
_ATTRIBUTE_STORES = frozenset(("STORE_ATTR",))
_NAME_STORES = frozenset(("STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"))
_NAME_LOADS = frozenset(("LOAD_FAST", "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF"))
_CONSTANT_LOADS = frozenset(("LOAD_CONST", "LOAD_SMALL_INT"))
_COMPUTING = frozenset(("LOAD_METHOD", "BINARY_OP", "BINARY_SUBSCR"))  # what follows a value computed with at once


def return_lines(code: CodeType) -> list[int]:
    """The lines of a function's ``return`` statements, in the order they appear."""
    return list(_lines_of(code, _RETURNS))


def stores_attribute(code: CodeType, line: int) -> bool:
    """Whether ``line`` of ``code`` sets an attribute of an object (``self.state = ...``): a value it stores
    there outlives the frame that made it."""
    return line in _lines_of(code, _ATTRIBUTE_STORES)


@functools.cache
def own_lines(code: CodeType) -> frozenset[int]:
    """The lines ``code`` runs itself (not those of the functions it defines)."""
    return frozenset(line for *_, line in code.co_lines() if line is not None)


def last_binding(code: CodeType, name: str, line: int) -> int | None:
    """The last line above ``line`` in ``code`` that binds the name ``name`` (``loss = ...``), or None."""
    return max((ln for ln in _bindings(code).get(name, ()) if ln < line), default=None)


def names_read(code: CodeType, line: int) -> list[str]:
    """The names ``line`` of ``code`` reads (locals, closure cells, globals), in the order it reads them."""
    return list(dict.fromkeys(instruction.argval for instruction, at in _instructions(code, _NAME_LOADS)
                              if at == line))


def named_object(code: CodeType, offset: int, items: bool = True) -> str | None:
    """The object whose attribute the instruction at ``offset`` reads, when the script names it: a name's attribute
    or (``items``) item by a constant (``model.head``, ``model[2].weight``, ``params['w']`` of ``....grad``); None for
    a bare name (a loop variable) or anything computed (a call, an item by a variable)."""
    listing = _listing(code)
    index = _indices(code).get(offset, 0) - 1
    parts = []
    while index >= 0:
        instruction = listing[index]
        if instruction.opname == "LOAD_ATTR":
            parts.append(f".{instruction.argval}")
            index -= 1
        elif items and _is_subscript(instruction) and index > 0 and listing[index - 1].opname in _CONSTANT_LOADS \
                and type(listing[index - 1].argval) in (int, str):
            parts.append(f"[{listing[index - 1].argval!r}]")
            index -= 2
        else:
            break
    if not parts or index < 0 or listing[index].opname not in _NAME_LOADS:
        return None
    return listing[index].argval + "".join(reversed(parts))


def _is_subscript(instruction: dis.Instruction) -> bool:
    return instruction.opname == "BINARY_SUBSCR" or (instruction.opname == "BINARY_OP" and instruction.argrepr == "[]")


@functools.lru_cache(maxsize=256)
def self_attribute_ops(code: CodeType) -> dict[str, int]:
    """The first line where a method computes with an attribute of its ``self``: calls a method of it
    (``self.edge_weight.sigmoid()``) or applies an operator right after reading it (``x * self.w``, ``self.w[0]``)."""
    if not code.co_argcount:
        return {}
    listing, found = _listing(code), {}
    spans = list(code.co_lines())
    for before, instruction, after in zip(listing, listing[1:], listing[2:]):
        if instruction.opname == "LOAD_ATTR" and before.opname == "LOAD_FAST" and before.argval == code.co_varnames[0] \
                and after.opname in _COMPUTING:
            line = next((ln for start, end, ln in spans if start <= instruction.offset < end), None)
            if line is not None:
                found.setdefault(instruction.argval, line)
    return found


@functools.lru_cache(maxsize=64)
def _listing(code: CodeType) -> list[dis.Instruction]:
    return list(dis.get_instructions(code))


@functools.lru_cache(maxsize=64)
def _indices(code: CodeType) -> dict[int, int]:
    """Each instruction's offset -> its place in `_listing` (a read at every step finds it at once)."""
    return {instruction.offset: index for index, instruction in enumerate(_listing(code))}


@functools.lru_cache(maxsize=256)
def _bindings(code: CodeType) -> dict[str, tuple[int, ...]]:
    found: dict[str, list[int]] = {}
    for instruction, line in _instructions(code, _NAME_STORES):
        found.setdefault(instruction.argval, []).append(line)
    return {name: tuple(lines) for name, lines in found.items()}


@functools.lru_cache(maxsize=256)
def _lines_of(code: CodeType, opnames: frozenset[str]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(line for _, line in _instructions(code, opnames)))


def _instructions(code: CodeType, opnames: frozenset[str]) -> Iterator[tuple[dis.Instruction, int]]:
    """The instructions of ``code`` named in ``opnames``, each with the line it runs on."""
    spans = list(code.co_lines())
    for instruction in dis.get_instructions(code):
        if instruction.opname in opnames:
            line = next((ln for start, end, ln in spans if start <= instruction.offset < end), None)
            if line is not None:
                yield instruction, line
