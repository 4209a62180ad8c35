"""What a transformation returns: a :class:`Change` (what it does in words, and the nodes it rewrites), or it
raises :class:`Unfixable` with the reason the fix stays in words."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Unfixable(Exception):
    """The finding's fix is not mechanical here; the message says why (the report keeps the fix in words)."""


class Change:
    """The rewrites of one fix in one file: ``summary`` says what it does; ``rewrites`` maps a node's ``id`` (of
    the file's parse) to the functions that rewrite that node."""

    def __init__(self, summary: str) -> None:
        self.summary = summary
        self.rewrites: dict[int, list[Callable[[Any], Any]]] = {}

    def rewrite(self, node: Any, function: Callable[[Any], Any]) -> None:
        self.rewrites.setdefault(id(node), []).append(function)
