"""Whether the tensors optimizers stepped with a gradient ever changed: a parameter that got its gradient
and was stepped, yet holds the values it had before its first step when the trace ends, learnt nothing,
because its learning rate was 0 or the gradient each step read had been zeroed after backward. And whether
an optimizer's learning rate fell to 0 and stayed there to the end of the run (a schedule shorter than the
run, ``StepLR(gamma=0)``): its parameters learnt early and stopped.

Values are compared through a `Fingerprint` (a copy of a small tensor, three float64 sums of a large one) taken
before the first step that had the parameter's gradient, and again before its optimizer's next steps until the values
changed (in a correct run, at the second step) or were seen unchanged three times, and at the end for those still
unchanged.
"""
from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass
from typing import Any

import torch

from gradcheck_l2c.record.fingerprints import Fingerprint
from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.param_sources import first_return
from gradcheck_l2c.record.torch_internals import functions_off


@dataclass(eq=False)
class Unchanged:
    """A stepped parameter whose values never changed: the step that first had its gradient, the optimizer,
    whether its group's learning rate was 0 at every step, and whether the gradient each step read was all
    zeros (although backward had given it one)."""

    key: int
    optimizer: str
    step_site: Site | None
    lr_always_zero: bool
    grad_always_zero: bool
    schedule: Site | None = None  # the scheduler's function that gave the rate of 0, at its first return
    stalled_at: int = 0  # the rate fell to 0 at this step (1-based) and stayed 0 to the last of ``steps``
    steps: int = 0
    zeroed_at: Site | None = None  # the user line that last wrote into its gradient, or clipped it to 0


#: How many leading values `nonzero` counts first: a gradient nonzero there needs no look at the rest.
NONZERO_PEEK = 4096


def nonzero(tensor: torch.Tensor) -> bool:
    """Whether a gradient (dense or sparse) holds anything but zeros; the tool's own read, not intercepted.
    (``count_nonzero`` where it can: half the time of ``any`` on CPU, at every size.) A large contiguous one is
    looked at from its first values, which answer for nearly every gradient: the whole of a ResNet-18's, twice at its
    first step, took 34 ms of it."""
    with functions_off():
        if tensor.layout is not torch.strided:
            return bool(tensor.any())
        if tensor.numel() > NONZERO_PEEK and tensor.is_contiguous() and bool(
                tensor.view(-1)[:NONZERO_PEEK].count_nonzero()):
            return True
        return bool(tensor.count_nonzero())


def _zero_grad(tensor: torch.Tensor) -> bool:
    with functions_off():
        grad = tensor.grad
    return grad is None or not nonzero(grad)


def _holds_at(group: dict, position: int, tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is still at ``position`` in the param group."""
    params = group["params"]
    return position < len(params) and params[position] is tensor


def _lr_is_zero(group: dict) -> bool:
    lr = group.get("lr")
    if isinstance(lr, torch.Tensor):
        with functions_off():
            return not bool(lr.any())
    return lr == 0


def _schedule_site(optimizer: Any) -> Site | None:
    """Where a learning rate of 0 came from: the user function a scheduler of ``optimizer`` multiplies its
    rate by (``LambdaLR``), at its first return. Looked for once, when a step ran with a rate of 0."""
    for holder in gc.get_referrers(optimizer):
        for function in getattr(holder, "lr_lambdas", None) or ():
            site = first_return(function)
            if site is not None:
                return site
    return None


@dataclass(eq=False)
class _Rates:
    """One optimizer's learning rate over its steps: how many ran, whether one before the last run of steps at
    a rate of 0 had a rate above 0, and that run's length and first step."""

    optimizer: str
    keys: set[int]
    steps: int = 0
    moved: bool = False
    zero_run: int = 0
    zero_from: int = 0
    zero_site: Site | None = None
    scheduler: Site | None = None  # where the latest scheduler of the optimizer was built


#: A rate of 0 for the last ``STALLED_STEPS`` steps or more, and ``1 / STALLED_SHARE`` of the run or more,
#: after a rate above 0, is a schedule that ended before the run (a single last step at 0 is a cosine's end).
STALLED_STEPS, STALLED_SHARE = 2, 20


class UpdateLog:
    """Fingerprints of stepped parameters not yet seen to change, and which of them only ever saw a learning
    rate of 0. A parameter is looked at again before each later step of its optimizer until it changed (in
    a correct run: once) or was seen unchanged ``_LOOKS`` times; the script's objects may be gone when the
    trace ends, so what the steps saw is the verdict for a tensor no longer alive then."""

    _LOOKS = 3

    def __init__(self) -> None:
        self._pending: dict[int, _Pending] = {}
        self._looking: set[int] = set()  # pending keys seen unchanged fewer than _LOOKS times: each step looks at these
        self._zero_read: set[int] = set()  # pending keys whose step read a zero gradient: backwards look at them
        self._settled: set[int] = set()  # keys whose values changed
        self.found: list[Unchanged] = []  # filled by `compare` at the end of the trace
        self._schedule: Site | bool | None = None  # the scheduler function behind a rate of 0 (False: none)
        self._rates: dict[int, _Rates] = {}  # id(optimizer record) -> its learning rate over its steps
        # the gradients user code read, to name a write into one (id(grad) -> key, key -> id(grad)), where the
        # user's writes into each key's gradient were last seen, and the last clipping to a norm of 0
        self.grad_ids: dict[int, int] = {}
        self._grad_of: dict[int, int] = {}
        self._written: dict[int, Site | None] = {}
        self._clipped_to_zero: Site | None = None
        self._records: list[Any] = []  # those records, kept so that their ids stay theirs
        # optimizer -> id(parameter) -> (its param group, its position there): `_group_holding`
        self._group_index: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def scheduled(self, record: Any, site: Site | None) -> None:
        """A learning-rate scheduler of the optimizer ``record`` stands for was built at ``site``."""
        self._rates_of(record).scheduler = site

    def rate(self, record: Any, optimizer: Any, site: Site | None) -> None:
        """``optimizer`` (``record``) is about to step at ``site``: note whether all its groups' rates are 0."""
        rates = self._rates_of(record)
        rates.steps += 1
        if all(_lr_is_zero(group) for group in optimizer.param_groups):
            if not rates.zero_run:
                rates.zero_from, rates.zero_site = rates.steps, site
            rates.zero_run += 1
        else:
            rates.moved, rates.zero_run = True, 0

    def grad_read(self, key: int, grad: torch.Tensor) -> None:
        """User code read the gradient of ``key``: a write into that tensor is a write into its gradient."""
        old = self._grad_of.get(key)
        if old != id(grad):
            self.grad_ids.pop(old, None)
            self.grad_ids[id(grad)] = self._grad_of[key] = key

    def grad_written(self, key: int, site: Site | None) -> None:
        """User code wrote into (or assigned) the gradient of ``key`` at ``site``."""
        self._written[key] = site

    def clipped(self, site: Site | None) -> None:
        """Gradients were clipped to a norm (or value) of 0 at ``site``: every one of them became zeros."""
        self._clipped_to_zero = site

    def _rates_of(self, record: Any) -> _Rates:
        rates = self._rates.get(id(record))
        if rates is None:
            rates = self._rates[id(record)] = _Rates(record.name, record.keys)
            self._records.append(record)
        return rates

    def stepping(self, key: int, tensor: torch.Tensor, optimizer: Any, site: Site | None) -> None:
        """``optimizer`` is about to step ``tensor`` (watched as ``key``) with its gradient, maybe first."""
        if key in self._pending or key in self._settled:
            return
        group = self._group_holding(optimizer, tensor)
        zero_lr = group is not None and _lr_is_zero(group)
        if zero_lr and self._schedule is None:
            self._schedule = _schedule_site(optimizer) or False
        zero_grad = _zero_grad(tensor)
        before = Fingerprint(tensor)
        self._pending[key] = _Pending(weakref.ref(tensor, before.forget), before, type(optimizer).__name__, site,
                                      zero_lr, zero_grad)
        self._looking.add(key)
        if zero_grad:
            self._zero_read.add(key)

    def _group_holding(self, optimizer: Any, tensor: torch.Tensor) -> dict | None:
        """The param group of ``optimizer`` that holds ``tensor``, from an index by id made once and again only when
        it no longer tells (a model of thousands of parameters asks for each at its first step)."""
        index = self._group_index.get(optimizer)
        found = index.get(id(tensor)) if index is not None else None
        if found is None or not _holds_at(*found, tensor):
            index = self._group_index[optimizer] = {
                id(p): (group, position) for group in optimizer.param_groups
                if isinstance(group["params"], (list, tuple)) for position, p in enumerate(group["params"])}
            found = index.get(id(tensor))
        return found[0] if found is not None and _holds_at(*found, tensor) else None

    def backward(self, keys: set[int]) -> None:
        """A backward gave ``keys`` their gradient: for a parameter whose step read zeros, note whether this
        gradient was zero already (the loss does not move it) or not (something zeroed it before the step)."""
        looked = self._zero_read & keys if self._zero_read else ()
        for key in looked:
            entry = self._pending.get(key)
            tensor = entry.ref() if entry is not None else None
            if tensor is None or not entry.grad_always_zero or entry.looks >= self._LOOKS:
                self._zero_read.discard(key)
                continue
            entry.fed = not _zero_grad(tensor)

    def step(self, optimizer: Any, keys: set[int]) -> None:
        """A step of ``optimizer`` (holding ``keys``) is about to run: the parameters it stepped before and
        that were not seen to change are looked at now, and a nonzero learning rate is noted."""
        pending, looking = self._pending, self._looking
        # a set operation, not a walk of every parameter at every step, nor of those whose optimizer is gone (a model
        # copied per task and stepped once stays in `_looking`)
        waiting = looking & keys
        if not waiting:
            return
        lrs = {id(p): _lr_is_zero(group) for group in optimizer.param_groups for p in group["params"]}
        for key in waiting:
            entry = pending[key]
            tensor = entry.ref()
            if tensor is None:
                continue
            if not entry.before.matches(tensor):
                del pending[key]
                looking.discard(key)
                self._settled.add(key)
                continue
            entry.looks += 1
            if entry.looks >= self._LOOKS:
                looking.discard(key)
            entry.lr_always_zero = entry.lr_always_zero and lrs.get(id(tensor), True)
            entry.grad_always_zero = entry.grad_always_zero and _zero_grad(tensor)
            if entry.grad_always_zero and entry.fed is not None:
                entry.zeroed = entry.zeroed or entry.fed  # False: the backward before this step gave zeros
            entry.fed = None

    def compare(self) -> None:
        """The trace ends: the stepped parameters whose values are what they were before their first step,
        by a last look where the tensor is alive, else by what the later steps saw."""
        for key, entry in self._pending.items():
            tensor = entry.ref()
            unchanged = entry.before.matches(tensor) if tensor is not None else entry.looks > 0
            if unchanged and (entry.lr_always_zero or (entry.grad_always_zero and entry.zeroed is not False)):
                # else the steps were too small to move it in floating point (vanishing, not missing), or its
                # gradient came out of backward as zeros (its loss does not move it; a step could not either)
                schedule = self._schedule if entry.lr_always_zero and self._schedule else None
                zeroed = self._written.get(key) or self._clipped_to_zero if not entry.lr_always_zero else None
                self.found.append(Unchanged(key, entry.optimizer, entry.site, entry.lr_always_zero,
                                            entry.grad_always_zero, schedule, zeroed_at=zeroed))
        for rates in self._rates.values():
            run = rates.zero_run
            if rates.keys and rates.moved and run >= STALLED_STEPS and run * STALLED_SHARE >= rates.steps:
                self.found.append(Unchanged(min(rates.keys), rates.optimizer, rates.zero_site, True, False,
                                            rates.scheduler, rates.zero_from, rates.steps))


@dataclass(eq=False)
class _Pending:
    ref: weakref.ref
    before: Fingerprint  # emptied when the tensor goes (`compare` then reads ``looks``)
    optimizer: str
    site: Site | None
    lr_always_zero: bool
    grad_always_zero: bool
    looks: int = 0  # later steps that saw it unchanged
    fed: bool | None = None  # whether the latest backward since the last look left a nonzero gradient
    zeroed: bool | None = None  # a looked step read zeros that its backward had not given (None: not seen)
