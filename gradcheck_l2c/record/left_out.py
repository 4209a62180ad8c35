"""Parameters that got gradients while no optimizer holds them, and plain leaves an optimizer of such leaves left out:
told or looked at again while they live (whether the script steps them itself shows in their values)."""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from gradcheck_l2c.record.events import EventLog
from gradcheck_l2c.record.fingerprints import Fingerprint
from gradcheck_l2c.record.held import HeldTensors
from gradcheck_l2c.record.watch import WatchRegistry


@dataclass(eq=False)
class _Told:
    """A parameter told in no optimizer: it, its values at its first gradient, and the backwards left to look."""

    ref: weakref.ref
    before: Fingerprint
    looks: int


class LeftOutLeaves:
    """Plain leaves the script made with ``requires_grad=True`` that got a gradient while optimizers held such leaves
    but not them: a weight left out of the list never changes, an input whose gradient the script uses is changed by it
    or made anew. And parameters in no optimizer, told at once: the script may step one itself (a Lagrange multiplier
    raised along its gradient by hand), which the next backwards that reach it show."""

    _LOOKS = 3

    def __init__(self, registry: WatchRegistry, events: EventLog) -> None:
        self.registry, self.events = registry, events
        self._first: dict[int, tuple[weakref.ref, Fingerprint]] = {}  # key -> (the leaf, its values' fingerprint)
        self.told: dict[int, _Told] = {}  # parameters told in no optimizer, looked at by their next backwards

    def first_gradient(self, key: int, tensor: torch.Tensor) -> None:
        """The leaf ``key`` got its first gradient and no optimizer holds it: its values now, while it lives."""
        first = self._first
        first[key] = (weakref.ref(tensor, lambda _: first.pop(key, None)), Fingerprint(tensor))

    def tell(self, key: int, tensor: torch.Tensor) -> None:
        """The parameter ``key`` was told in no optimizer at its first gradient: its values now, for `look`."""
        told = self.told
        told[key] = _Told(weakref.ref(tensor, lambda _: told.pop(key, None)), Fingerprint(tensor), self._LOOKS)

    def look(self, keys: set[int]) -> None:
        """A backward reached ``keys``: a parameter told in no optimizer whose values changed since its first gradient
        was stepped by the script (looked at by its next few backwards only)."""
        for key in self.told.keys() & keys:
            entry = self.told[key]
            tensor = entry.ref()
            entry.looks -= 1
            if tensor is not None and not entry.before.matches(tensor):
                self.registry.all[key].stepped_by_script = True
                entry.looks = 0
            if entry.looks <= 0:
                del self.told[key]

    def end(self, held: HeldTensors) -> None:
        """The trace ends: such a leaf that no optimizer took since, that later backwards gave gradients too, and whose
        values never changed is in no optimizer."""
        for key, (ref, before) in list(self._first.items()):
            watched, tensor = self.registry.all[key], ref()
            if tensor is None or watched.optimized or watched.last_reached <= watched.first_reached or held(tensor):
                continue
            if before.matches(tensor):
                self.events.record("optimizer", key, watched.site, "none")
