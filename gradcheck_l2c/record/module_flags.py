"""``module.requires_grad = True`` set by user code: an attribute of the Module object that no parameter reads, where
``module.requires_grad_(True)`` (or each parameter's flag) was meant. Judged when the trace ends: a module whose
parameters disagree with the value set (still frozen after ``= True``, still learning after ``= False``) was misled."""
from __future__ import annotations

import weakref
from typing import NamedTuple

from torch import nn

from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.watch import WatchRegistry

#: The most such assignments remembered (a model that sets it on each of its layers).
_KEPT = 64


class MisleadingFlag(NamedTuple):
    """``requires_grad = value`` set at ``site`` on a ``module_class`` object whose parameters (``keys``, the watched
    ones; ``count`` in all) kept the other flag; for ``False``, only those that then got gradients."""

    site: Site | None
    module_class: str
    value: bool
    keys: frozenset[int]
    count: int


class ModuleFlags:
    """The ``requires_grad`` attributes user code set on modules, and those that misled it."""

    def __init__(self) -> None:
        self._set: dict[tuple[int, Site | None], tuple[weakref.ref, bool]] = {}
        self.misleading: list[MisleadingFlag] = []

    def set(self, module: nn.Module, value: bool, site: Site | None) -> None:
        """User code ran ``module.requires_grad = value`` at ``site``."""
        if len(self._set) < _KEPT:
            self._set[(id(module), site)] = (weakref.ref(module), value)

    def collect(self, registry: WatchRegistry) -> None:
        """At the trace's end: the modules still alive whose parameters' flags are not the value set on them."""
        for (_, site), (ref, value) in self._set.items():
            module = ref()
            if module is None:
                continue
            other = [p for p in module.parameters() if p.requires_grad != value]
            if not value:  # a freeze that did not take: only if those parameters then learnt
                other = [p for p in other if p.grad is not None]
            if other:
                keys = frozenset(k for k in map(registry.key_of, other) if k is not None)
                self.misleading.append(MisleadingFlag(site, type(module).__name__, value, keys, len(other)))
        self._set.clear()
