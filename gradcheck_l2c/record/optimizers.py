"""Optimizers and their steps: which tensors each holds, and which steps found no gradient for one."""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

import torch

from gradcheck_l2c.record.code_lines import own_lines
from gradcheck_l2c.record.events import EventLog
from gradcheck_l2c.record.gradient_readers import GradientReaders
from gradcheck_l2c.record.gradient_use import GradientUse
from gradcheck_l2c.record.held import HeldTensors
from gradcheck_l2c.record.left_out import LeftOutLeaves
from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.param_sources import branch_left_out, group_left_out, params_built_at
from gradcheck_l2c.record.scope import Clock
from gradcheck_l2c.record.stacks import user_stack
from gradcheck_l2c.record.taint import Chain, TaintStore
from gradcheck_l2c.record.torch_internals import functions_off
from gradcheck_l2c.record.updates import UpdateLog, nonzero
from gradcheck_l2c.record.watch import Watched, WatchRegistry


@dataclass
class OptimizerRecord:
    """An optimizer used during the trace: its class, where it was built (or first stepped, when it
    was built before the trace), which tensors it was given and the watched keys among them."""

    name: str
    site: Site | None
    params: list[weakref.ref]
    optimizer: weakref.ref
    keys: set[int] = field(default_factory=set)
    step_site: Site | None = None  # where its latest step() was called
    step_stack: tuple = ()  # the user frames of that call (`locations.user_stack`), innermost first
    ordinal: int = 0  # built as the trace's n-th optimizer (1-based; 0: built before the trace)
    names: set[str] = field(default_factory=set)  # variables and attributes that held it, looked up if it never stepped
    step_call: Site | None = None  # never stepped: the one `<name>.step()` line the script has for it
    step_guard: Site | None = None  # and the `if` around that call
    params_site: Site | None = None  # where the list it was given was built, when not on its own line
    group_site: Site | None = None  # a parameter group built beside it and never given to it: its last line
    group_keys: set[int] = field(default_factory=set)  # and the watched keys in that group
    group_guarded: bool = False  # `group_site` is an ``if`` whose untaken branch adds that group to the list
    lone_backward: Site | None = None  # not stepped yet: an early backward that reached its parameters, no other's
    shared_backward: Site | None = None  # or one that reached its parameters and other optimizers' too
    shared_with: tuple[int, ...] = ()  # the positions of those other optimizers
    scheduler_step: Site | None = None  # not stepped yet: the first user line that stepped its learning-rate schedule
    scheduler_steps: int = 0  # and how often user code stepped that schedule meanwhile
    step_order: int = -1  # when, on the trace's count of steps
    first_step_backwards: int = -1  # the trace's count of backward calls at its first step
    marked: tuple[int, tuple] = (0, ())  # (watched tensors, its groups' layout) when last looked at (`unmarked`)
    created: int = 0  # the count of steps when it was built
    steps: int = 0  # how many times it stepped
    undone: int = 0  # how many of those steps a reload of a parameter it holds took back before any other step
    undone_at: int = -1  # the `step_order` of the latest step taken back
    reached: set[int] = field(default_factory=set)  # watched keys backward reached since its latest step
    position: int = 0  # its place in `OptimizerLog.records`
    refs: dict[int, weakref.ref] = field(default_factory=dict)  # id -> the parameter (ids of dead ones are reused)
    _groups: int = -1

    def unmarked(self, optimizer: Any, registry: WatchRegistry) -> list[Watched]:
        """The watched tensors it holds that may not be marked yet: while each group's parameter list stays the same
        list of the same length, only those watched since the last look (a loop that makes a fresh leaf at every step
        would otherwise walk every parameter at every step); else all of them, read anew."""
        layout = tuple((id(params), len(params)) for params in (group["params"] for group in optimizer.param_groups))
        watched_now, (watched_then, layout_then) = len(registry.all), self.marked
        self.marked = watched_now, layout
        if layout == layout_then:
            return [w for w in registry.all[watched_then:watched_now] if (t := w.ref()) is not None and self.holds(t)]
        return [w for w in map(registry.get, self._read(optimizer)) if w is not None]

    def holds(self, tensor: torch.Tensor) -> bool:
        """Whether it holds ``tensor``, counting groups added later with ``add_param_group`` (one lookup: a model of
        thousands of parameters asks for each)."""
        optimizer = self.optimizer()
        if optimizer is not None and len(optimizer.param_groups) != self._groups:
            self._read(optimizer)
        ref = self.refs.get(id(tensor))
        return ref is not None and ref() is tensor

    def _read(self, optimizer: Any) -> list[torch.Tensor]:
        """The parameters ``optimizer`` holds now, remembered (weakly) for `holds` and the judge."""
        params = [p for group in optimizer.param_groups for p in group["params"]]
        self.params = [weakref.ref(p) for p in params]
        self.refs = {id(p): ref for p, ref in zip(params, self.params)}
        self._groups = len(optimizer.param_groups)
        return params


def note_sources(record: OptimizerRecord, frame: Any, registry: WatchRegistry) -> None:
    """Where the parameter list a new optimizer was given was built, and a parameter group built beside it in
    the calling function but never given to it, or added to it only under an ``if`` the run did not take
    (`param_sources`): the lines a left-out parameter is fixed at."""
    record.params_site = params_built_at(frame, record.name)
    held = {id(ref()) for ref in record.params}
    left = group_left_out(frame, held)
    if left is None:
        left = branch_left_out(frame, record.name, held)
        record.group_guarded = left is not None
    if left is not None:
        record.group_site = left[0]
        record.group_keys = {registry.key_of(p) for p in left[1]} - {None}


@dataclass
class StepMiss:
    """A tensor that an optimizer stepped without a gradient, although a loss since its previous step
    reached the tensor's values through a cut: the cut kept that gradient from the step."""

    optimizer: str
    site: Site | None  # the first such step() call
    steps: int = 0
    chains: dict[Chain, int] = field(default_factory=dict)


_STACKED_STEPS = 3


class OptimizerLog:
    """Every optimizer of the trace, and what each of its steps found."""

    def __init__(self, registry: WatchRegistry, taints: TaintStore, events: EventLog, clock: Clock,
                 updates: UpdateLog) -> None:
        self.registry, self.taints, self.events, self.clock, self.updates = registry, taints, events, clock, updates
        self.use = GradientUse()
        self.readers = GradientReaders()  # whether a backward fed the script's own reading of gradients (Grad-CAM)
        self.reading = False  # the latest backward fed one and reached no parameter a live optimizer holds
        self.told_anew = False  # a parameter was told in no optimizer since the user's frames were last looked at
        self.records: list[OptimizerRecord] = []
        self.live: dict[int, OptimizerRecord] = {}  # id(optimizer) -> record, for the optimizers alive
        self.held = HeldTensors(self.live)  # whether any of `records` holds a tensor
        self.plain_leaves = False  # whether any of them holds tensors the script made with requires_grad=True
        self.weights = False  # whether any of them holds a module's parameter
        # keys a backward missed since an optimizer holding them stepped, keys a step found with a gradient, without
        self.unstepped: dict[int, set[Chain]] = {}
        self.stepped_keys: set[int] = set()
        self.misses: dict[int, StepMiss] = {}
        # id(optimizer) -> (backward calls, assigned gradients) seen at its last step; -> its latest zero_grad()
        self._last_step: dict[int, tuple[int, int]] = {}
        self._cleared: dict[int, tuple[Site | None, int, int, tuple[Site, ...]]] = {}
        self._module_cleared: tuple[weakref.ref, Site | None, int, tuple[Site, ...]] | None = None  # latest Module's
        self.stepped_since: list[set[int]] = []  # the keys of each optimizer that stepped since the last backward
        self.left_out = LeftOutLeaves(registry, events)  # plain leaves that optimizers holding such leaves left out
        self.last_reached: set[int] | frozenset[int] = frozenset()  # the keys the latest backward reached
        self.orphans: dict[int, OptimizerRecord] = {}  # keys of optimizers gone, not yet reached since -> that one
        self._phases: dict[Site | None, int] = {}  # where optimizers were built -> the count of steps at the latest

    def record_for(self, optimizer: Any, site: Site | None) -> OptimizerRecord:
        """The record of ``optimizer``, made now if it was built before the trace; its watched
        parameters are marked as meant to learn (this outlives them)."""
        record = self.live.get(id(optimizer))
        if record is None or record.optimizer() is not optimizer:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            record = OptimizerRecord(type(optimizer).__name__, site, [weakref.ref(p) for p in params],
                                     weakref.ref(optimizer), position=len(self.records))
            self.records.append(record)
            gone = self.live.pop(id(optimizer), None)  # live in the order they were made, as `records`
            if gone is not None:  # its optimizer died, and this one was made where it was
                self.held.retire(gone)
            self.live[id(optimizer)] = record
        fresh = not record.keys
        for watched in record.unmarked(optimizer, self.registry):
            watched.optimized = True
            record.keys.add(watched.key)
            if watched.user_leaf and not watched.is_parameter:
                self.plain_leaves = True
            self.weights = self.weights or not watched.user_leaf or watched.owner is not None
        if fresh and self._new_phase(record.site) and self.stepped_keys & record.keys:
            self.stepped_keys -= record.keys  # whether its steps find each gradient is new (a next task's head)
            self.taints.unsettle(record.keys)
        return record

    def _new_phase(self, site: Site | None) -> bool:
        """An optimizer built at ``site`` begins a phase, unless the last one built there stepped once (one per step)."""
        last, self._phases[site] = self._phases.get(site), self.clock.steps
        return last is None or self.clock.steps - last >= 2

    def holding(self, key: int) -> bool:
        """Whether a live optimizer holds the watched tensor ``key``."""
        return any(key in record.keys for record in self.live.values())

    def reached(self, keys: set[int]) -> None:
        """A backward gave these watched tensors their gradient: each live optimizer's next step will look."""
        for ident, record in list(self.live.items()):
            if record.optimizer() is None:
                self.held.retire(self.live.pop(ident))
                self.orphans.update((k, record) for k in record.keys if self.registry.all[k].tensor is not None)
            else:
                record.reached |= keys
        if self.orphans and self.live:
            self._left_behind(keys & self.orphans.keys())
        self.last_reached = keys

    def _left_behind(self, keys: set[int]) -> None:
        """Parameters a gone optimizer held, reached by a backward while none of the live ones holds them: the one
        that replaced it (the newest) left them out, and they stop changing although gradients still arrive."""
        newest = max(self.live.values(), key=lambda r: r.position)
        for key in keys:
            gone, watched = self.orphans.pop(key), self.registry.all[key]
            tensor = watched.tensor
            if tensor is not None and watched.is_parameter and not any(r.holds(tensor) for r in self.live.values()):
                self.events.record("optimizer", key, watched.site, "left", records=(gone, newest))

    def missed(self, key: int, chain: Chain) -> None:
        """A backward missed ``key`` through the cuts of ``chain``: the next step that holds it will look."""
        self.unstepped.setdefault(key, set()).add(chain)

    def first_gradient(self, watched: Watched) -> None:
        """A watched leaf's first gradient: is any optimizer going to use it? (Checked now, while it lives.) A
        parameter in none is told at once; a plain leaf the script made to learn, while optimizers hold such leaves
        but not this one, is looked at again when the trace ends (`LeftOutLeaves`)."""
        tensor = watched.tensor
        if not self.records or tensor is None or self.held(tensor) or self.reading:
            return
        if watched.is_parameter:
            if not self.weights:  # every optimizer steps inputs (an image, latents): the model is what they go through
                return
            self.events.record("optimizer", watched.key, watched.site, "none")
            self.left_out.tell(watched.key, tensor)
            self.told_anew = True
        elif watched.user_leaf and self.plain_leaves:
            self.left_out.first_gradient(watched.key, tensor)

    def cleared(self, optimizer: Any, site: Site | None, path: tuple[Site, ...] = ()) -> None:
        """``optimizer.zero_grad()`` (or a module's) ran at ``site``, called through the user lines ``path``."""
        if isinstance(optimizer, torch.nn.Module):
            self._module_cleared = (weakref.ref(optimizer), site, self.clock.backwards, path)
            return self.use.module_cleared(optimizer, self.registry.key_of, self.live, site)
        self._cleared[id(optimizer)] = (site, self.clock.backwards, self.clock.assigned, path)
        record = self.live.get(id(optimizer))
        if record is not None and record.optimizer() is optimizer:
            self.use.cleared(id(optimizer), record.keys, record.name, record.step_site, site)

    def step(self, optimizer: Any, site: Site | None, closure: bool = False) -> None:
        """``optimizer.step()`` is about to run: note the tensors it steps without the gradient a cut kept
        from them, or, when it finds no gradient at all although gradients arrived (a backward, or user code
        assigning ``.grad``) since its last step, that they were erased in between (``zero_grad()`` after
        ``backward()``). A step given a closure computes its gradients later, inside the closure."""
        record = self.record_for(optimizer, site)
        self.stepped_since.append(record.keys)
        clock = self.clock
        clock.steps += 1
        record.step_site, record.step_order, record.steps = site, clock.steps, record.steps + 1
        if record.first_step_backwards < 0:
            record.first_step_backwards = clock.backwards
        # the first steps' frames, where a step too early breaks a later backward (a stack walk each; later keep none)
        record.step_stack = user_stack(2) if clock.steps <= _STACKED_STEPS else ()
        self.updates.step(optimizer, record.keys)
        self.updates.rate(record, optimizer, site)
        self.use.stepped(id(optimizer), record.keys, closure)
        since, since_assigned = self._last_step.get(id(optimizer), (0, 0))
        self._last_step[id(optimizer)] = (clock.backwards, clock.assigned)
        if self._stepped(record, site) or closure:
            return  # a cut explains the missing gradients, or the closure will make them
        if clock.backwards == since and clock.assigned == since_assigned:
            if not clock.backwards and not clock.assigned:
                self._before_any_backward(optimizer, site)
            return  # none arrived since the last step
        with functions_off():  # torch's reads, not the user's: no need to intercept them (the first found ends it)
            if any(p.grad is not None for group in optimizer.param_groups for p in group["params"] if p.requires_grad):
                return
            params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
        if not params:
            return
        watched = [w for w in map(self.registry.get, params) if w is not None]
        if not any(self.registry.last_reached(w) > since for w in watched) and clock.assigned == since_assigned:
            return  # they never got gradients: that is told per tensor, not as erased ones
        _emptied_step(self, record, optimizer, params, site)

    def _before_any_backward(self, optimizer: Any, site: Site | None) -> None:
        """A step before any backward or assigned ``.grad`` in the run, on parameters without a gradient: it
        changes nothing. The judge reports it only if no backward ran in the whole run (a step before the
        loop that quiets a scheduler's warning is followed by backwards)."""
        with functions_off():
            params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
            if not params or any(p.grad is not None for p in params):
                return
        key = self.registry.key_of(params[0])
        self.events.record("optimizer", -1 if key is None else key, site, "no_backward",
                           optimizer=type(optimizer).__name__, size=len(params))

    def _stepped(self, record: OptimizerRecord, site: Site | None) -> bool:
        """Which tensors the step holds got their gradient for it. One that a backward since its previous
        step missed through a cut, and that has no gradient now, is stepped without the gradient that loss
        meant to give it (a GAN's generator step on a detached fake, whose other gradients were cleared
        before the step). Returns whether this step had such a tensor.

        Only the tensors that were reached or missed since the previous step are looked at, and each
        only until one step found its gradient: correct programs pay a few set operations per step."""
        reached, record.reached = record.reached, set()
        pending = self.unstepped
        # from this optimizer's keys: misses of tensors no optimizer holds (a copied target network) stay, and grow
        missed = pending.keys() & record.keys if pending else ()
        candidates = ((reached & record.keys) - self.stepped_keys).union(missed)
        found = False
        for key in candidates:
            chains = pending.pop(key, None)
            if key in self.stepped_keys:
                continue
            tensor = self.registry.all[key].tensor
            grad = tensor.grad if tensor is not None else None
            # zeros are a gradient only if backward reached it, uncut since (zero_grad(set_to_none=False) leaves zeros)
            if grad is not None and ((key in reached and not chains) or nonzero(grad)):
                self.stepped_keys.add(key)
                self.updates.stepping(key, tensor, record.optimizer(), site)
                self.misses.pop(key, None)
                if not self.registry.all[key].grad_used:  # else the script's own reads may still show a cut
                    self.taints.settle(key)  # its cuts no longer matter: they need not travel further
                continue
            if chains:
                miss = self.misses.get(key)
                if miss is None:
                    miss = self.misses[key] = StepMiss(record.name, site)
                miss.steps += 1
                for chain in chains:
                    miss.chains[chain] = miss.chains.get(chain, 0) + 1
                found = True
        return found


def _emptied_step(log: OptimizerLog, record: OptimizerRecord, optimizer: Any, params: list[Any],
                  site: Site | None) -> None:
    """``optimizer.step()`` at ``site`` found no gradient, though some arrived since its last step: erased (zero_grad()
    after backward()), or, the backward before it reaching only another optimizer's parameters, their lists swapped."""
    key = log.registry.key_of(params[0])
    last = log.last_reached
    holder = None if not last or not last.isdisjoint(record.keys) else next(
        (other for other in log.live.values() if other is not record and other.optimizer() is not None
         and last <= other.keys), None)
    if holder is not None:
        log.events.record("optimizer", -1 if key is None else key, record.params_site or record.site, "swapped",
                          optimizer=record.name, size=len(params), step=site, first=holder.name,
                          records=(record, holder))
        return
    cleared = log._cleared.get(id(optimizer))
    clock = log.clock
    erased_at = cleared[0] if cleared is not None and cleared[1:3] == (clock.backwards, clock.assigned) else site
    log.events.record("optimizer", -1 if key is None else key, erased_at, "erased",
                      optimizer=type(optimizer).__name__, size=len(params), step=site)


def step_undone(log: OptimizerLog, key: int) -> None:
    """Values were copied into the watched parameter ``key`` without grad: when the latest step of all was of an
    optimizer holding it, that step is taken back (MAML's and Reptile's inner step, undone by reloading the weights
    saved before it), counted once per step."""
    latest = next((record for record in log.live.values() if record.step_order == log.clock.steps), None)
    if latest is not None and key in latest.keys and latest.undone_at != latest.step_order:
        latest.undone, latest.undone_at = latest.undone + 1, latest.step_order


def read_cleared(log: OptimizerLog, watched: Watched, read: Site | None, reader: CodeType | None) -> None:
    """User code found None in ``.grad`` of a tensor that got gradients: a ``zero_grad()`` of an optimizer or a
    module holding it ran since the last backward and set it to None (the script saw no gradient where one came). Not
    in a run whose code assigns gradients itself (``if p.grad is None: p.grad = torch.zeros_like(p)``, PCGrad).
    A read in a function that itself called down to that ``zero_grad()`` (``reader``), above that call, is none of
    this: it comes before the next backward (the top of the next step, after a wrapper's ``update_params()`` that
    stepped and cleared), where None is what any step shows."""
    if log.clock.assigned:
        return
    now, tensor, by = log.clock.backwards, watched.tensor, None
    for record in log.live.values():
        entry = log._cleared.get(id(record.optimizer()))
        if entry is not None and entry[1] == now and watched.key in record.keys:
            by = (entry[0], record.name, entry[3])
    latest = log._module_cleared
    module = latest[0]() if latest is not None and latest[2] == now else None
    if by is None and module is not None and any(p is tensor for p in module.parameters()):
        by = (latest[1], type(module).__name__, latest[3])
    if by is None:
        return
    site, name, path = by
    called = next((s for s in path if reader is not None and s.file == reader.co_filename
                   and s.line in own_lines(reader)), None) if read is not None else None
    if called is not None and read.line <= called.line:
        return
    log.events.record("optimizer", watched.key, site, "read_cleared", read=read, by=name)
