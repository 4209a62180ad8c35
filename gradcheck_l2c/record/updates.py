"""Whether the tensors optimizers stepped with a gradient ever changed: a parameter that got its gradient
and was stepped, yet holds the values it had before its first step when the trace ends, learnt nothing
(a learning rate of 0, a gradient masked to zero before each step, a step that skipped it).

Values are compared through a fingerprint (three float64 sums) taken once, before the first step that had
the parameter's gradient, and once more at the end: two reductions per parameter for the whole run.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import torch

from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.torch_internals import functions_off


@dataclass(eq=False)
class Unchanged:
    """A stepped parameter whose values never changed: the step that first had its gradient, the optimizer,
    and whether its group's learning rate was 0 at every step."""

    key: int
    optimizer: str
    step_site: Site | None
    lr_always_zero: bool


def fingerprint(tensor: torch.Tensor) -> torch.Tensor:
    """Three sums that change when any value changes (short of an exact cancellation in all three)."""
    with functions_off(), torch.no_grad():
        values = tensor.detach().to(torch.float64)
        return torch.stack((values.sum(), values.abs().sum(), (values * values).sum())).cpu()


def _lr_is_zero(group: dict) -> bool:
    lr = group.get("lr")
    if isinstance(lr, torch.Tensor):
        with functions_off():
            return not bool(lr.any())
    return lr == 0


class UpdateLog:
    """Fingerprints of stepped parameters, and which of them only ever saw a learning rate of 0."""

    def __init__(self) -> None:
        self._first: dict[int, tuple[weakref.ref, torch.Tensor, str, Site | None]] = {}
        self._zero_lr: set[int] = set()  # fingerprinted keys whose group had lr 0 at every step so far
        self.found: list[Unchanged] = []  # filled by `compare` at the end of the trace

    def stepping(self, key: int, tensor: torch.Tensor, optimizer: Any, site: Site | None) -> None:
        """``optimizer`` is about to step ``tensor`` (watched as ``key``) with its gradient, maybe first."""
        if key in self._first:
            return
        self._first[key] = (weakref.ref(tensor), fingerprint(tensor), type(optimizer).__name__, site)
        group = next((g for g in optimizer.param_groups if any(p is tensor for p in g["params"])), None)
        if group is not None and _lr_is_zero(group):
            self._zero_lr.add(key)

    def step(self, optimizer: Any, keys: set[int]) -> None:
        """A step of ``optimizer`` (holding ``keys``): a nonzero learning rate clears the keys it steps."""
        waiting = self._zero_lr & keys
        if not waiting:
            return
        for group in optimizer.param_groups:
            if not _lr_is_zero(group):
                ids = {id(p) for p in group["params"]}
                for key in list(waiting):
                    tensor = self._first[key][0]()
                    if tensor is not None and id(tensor) in ids:
                        self._zero_lr.discard(key)

    def compare(self) -> None:
        """The trace ends: the stepped parameters (still alive) whose values are what they were before
        their first step."""
        for key, (ref, before, optimizer, site) in self._first.items():
            tensor = ref()
            if tensor is not None and torch.equal(fingerprint(tensor), before):
                self.found.append(Unchanged(key, optimizer, site, key in self._zero_lr))
