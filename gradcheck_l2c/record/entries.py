"""Weak references that take their entry out of a table when their object dies.

The recorder keeps, for many live objects (modules, parameters, tensors), an entry under the object's id in a table,
to be dropped when the object goes. A reference with a callback closure per entry made three objects for the
collector to walk, per layer of a model of thousands, in several tables; one reference that knows its table and key
is one, and every object the tool keeps brings the script's next walk of its whole heap sooner.
"""
from __future__ import annotations

import weakref
from typing import Any


class EntryRef(weakref.ref):
    """A weak reference that knows its table and key (made by `entry_ref`)."""

    __slots__ = ("table", "ident")


def entry_ref(obj: Any, table: dict, ident: Any) -> EntryRef:
    """``weakref.ref(obj)`` that runs ``table.pop(ident, None)`` when ``obj`` dies; made through weakref's own
    constructor (a Python ``__init__`` would triple the cost of each one)."""
    reference = EntryRef(obj, _drop)
    reference.table, reference.ident = table, ident
    return reference


def _drop(reference: EntryRef) -> None:
    reference.table.pop(reference.ident, None)
