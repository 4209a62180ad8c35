"""What the statements on a line of compiled user code do, read from its code object (never its text): the
lines of a function's ``return``s, the lines that store a value as an attribute of an object, and those that bind
a name."""
from __future__ import annotations

import dis
import functools
from collections.abc import Iterator
from types import CodeType

_RETURNS = frozenset(("RETURN_VALUE", "RETURN_CONST"))
_ATTRIBUTE_STORES = frozenset(("STORE_ATTR",))
_NAME_STORES = frozenset(("STORE_FAST", "STORE_NAME", "STORE_GLOBAL", "STORE_DEREF"))


def return_lines(code: CodeType) -> list[int]:
    """The lines of a function's ``return`` statements, in the order they appear."""
    return list(_lines_of(code, _RETURNS))


def stores_attribute(code: CodeType, line: int) -> bool:
    """Whether ``line`` of ``code`` sets an attribute of an object (``self.state = ...``): a value it stores
    there outlives the frame that made it."""
    return line in _lines_of(code, _ATTRIBUTE_STORES)


def last_binding(code: CodeType, name: str, line: int) -> int | None:
    """The last line above ``line`` in ``code`` that binds the name ``name`` (``loss = ...``), or None."""
    return max((ln for ln in _bindings(code).get(name, ()) if ln < line), default=None)


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
