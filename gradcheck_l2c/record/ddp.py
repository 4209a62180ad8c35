"""What DistributedDataParallel did during a trace: the parameters each wrapper reduces (in the order
of DDP's parameter indices), which of its modules each forward called and from which line, and DDP's
"unused parameters" errors.

DDP's own traffic (parameter broadcasts, bucket views, its output Function) is library work and never a
cut; these facts let the judge name the parameters DDP waits for by module path, line and reason.
"""
from __future__ import annotations

import re
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

from torch import nn
from torch.nn.modules import module as module_hooks

from gradcheck_l2c.record.locations import Site, user_site
from gradcheck_l2c.record.source_sites import forward_site

#: The starts of DDP's errors about parameters that got no gradient in an iteration.
UNUSED_ERRORS = ("Expected to have finished reduction in the prior iteration",
                 "Your training graph has changed in this iteration")
_INDICES = re.compile(r"Parameter indices which did not receive grad for rank \d+: ([\d ]+)")
_NAMES = re.compile(r"Parameters which did not receive grad for rank \d+: ([^\n]+)")


@dataclass
class DdpError:
    """One of DDP's unused-parameter errors: where the user's code hit it and what it names."""

    site: Site | None
    iteration: int  # the DDP forward (1-based) whose reduction did not finish
    static_graph: bool  # raised because static_graph=True saw the set of used parameters change
    indices: tuple[int, ...]  # DDP's parameter indices, when the message lists them
    names: tuple[str, ...]  # parameter names inside the wrapped module (TORCH_DISTRIBUTED_DEBUG=DETAIL)
    frozen: frozenset[int]  # watched keys of DDP's parameters that no longer require grad


@dataclass
class DdpModule:
    """A module inside the wrapped model, as the facts need it after the model is gone."""

    path: str  # ``Net.aux``
    cls: str  # its class's name
    parent: str | None  # the path of the module whose forward should call it
    forward: Site | None  # where its class's forward is defined
    keys: tuple[int, ...]  # watched keys of its own parameters


@dataclass(eq=False)
class DdpRecord:
    """One ``DistributedDataParallel`` built during the trace, kept as plain facts (keys and paths),
    since the model is usually gone by the time the trace is judged."""

    wrapper: weakref.ref
    keys: list[int | None]  # watched keys of the parameters DDP reduces, indexed as in its messages
    names: dict[str, int]  # parameter name inside the wrapped module -> watched key
    owners: dict[int, str]  # watched key -> path of the module that holds it
    modules: dict[str, DdpModule]
    site: Site | None  # the ``DistributedDataParallel(...)`` line
    find_unused: bool
    first_event: int  # events before this one happened before DDP(...)
    static_graph: bool = False
    forwards: int = 0
    forward_events: list[int] = field(default_factory=list)  # events recorded before each forward began
    #: module path -> (first forward that called it, last one, the line of the last call)
    calls: dict[str, tuple[int, int, Site | None]] = field(default_factory=dict)
    errors: list[DdpError] = field(default_factory=list)


class DdpLog:
    """Every DDP wrapper of the trace, and the global forward pre-hook that sees which of their
    modules each forward called (one dict lookup per module call; copies of a model are not seen)."""

    def __init__(self) -> None:
        self.records: list[DdpRecord] = []
        self._modules: dict[int, tuple[weakref.ref, DdpRecord, str]] = {}  # id(module) -> its record, path
        self._hook: Any = None

    def wrapped(self, ddp: Any, params: list[Any], key_of: Callable[[Any], int | None], first_event: int) -> None:
        """DDP built its reducer over ``params``: remember them, and hook its modules' forwards."""
        model = ddp.module
        root = type(model).__name__
        paths = {id(m): f"{root}.{name}" if name else root for name, m in model.named_modules()}
        parents = {id(child): paths[id(module)] for module in model.modules() for child in module.children()}
        modules, owners = {}, {}
        for module in model.modules():
            path, parent = paths[id(module)], parents.get(id(module))
            keys = tuple(k for k in map(key_of, module.parameters(recurse=False)) if k is not None)
            modules[path] = DdpModule(path, type(module).__name__, parent, forward_site(type(module), user_only=False), keys)
            owners.update((key, path) for key in keys)
        record = DdpRecord(weakref.ref(ddp), [key_of(p) for p in params],
                           {n: k for n, k in ((n, key_of(p)) for n, p in model.named_parameters()) if k is not None},
                           owners, modules, user_site(1), bool(ddp.find_unused_parameters), first_event)
        self.records = [r for r in self.records if r.wrapper() is not ddp]  # built again: __setstate__
        self.records.append(record)
        for module in model.modules():
            self._modules[id(module)] = (weakref.ref(module), record, paths[id(module)])
        if self._hook is None:
            self._hook = module_hooks.register_module_forward_pre_hook(self._called)

    def called(self, record: DdpRecord, path: str, iteration: int | None) -> Site | None | bool:
        """Whether the module at ``path`` ran in that DDP forward (any, without one): the line of its
        last call, or False."""
        call = record.calls.get(path)
        if call is None or (iteration is not None and iteration not in call[:2]):
            return False
        return call[2]

    def record_of(self, ddp: Any) -> DdpRecord | None:
        for record in self.records:
            if record.wrapper() is ddp:
                return record
        return None

    def forward(self, ddp: Any, events: int) -> DdpRecord | None:
        """A DDP forward starts, after ``events`` events."""
        record = self.record_of(ddp)
        if record is not None:
            record.forwards += 1
            record.forward_events.append(events)
            record.static_graph = bool(getattr(ddp, "static_graph", False))
        return record

    def error(self, error: BaseException, site: Site | None, record: DdpRecord | None = None,
              frozen: frozenset[int] = frozenset(), in_forward: bool = False) -> None:
        """A RuntimeError from DDP's forward (``record``) or from a backward: keep it if it is DDP's
        unused-parameter error. In forward it is about the previous iteration."""
        text = str(error)
        if not any(start in text for start in UNUSED_ERRORS):
            return
        if record is None:
            record = self.records[-1] if self.records else None
        if record is None:
            return
        indices = _INDICES.search(text)
        names = _NAMES.search(text)
        changed = UNUSED_ERRORS[1] in text  # static_graph: unused in the first iteration, used now
        record.errors.append(DdpError(
            site,
            1 if changed else record.forwards - 1 if in_forward else record.forwards,
            changed or "static_graph" in text,
            tuple(int(i) for i in indices.group(1).split()) if indices else (),
            tuple(n.strip() for n in names.group(1).split(",")) if names else (),
            frozen,
        ))

    def window(self, record: DdpRecord, iteration: int | None, last_backward: int) -> tuple[int, int]:
        """The events (as a range of orders) of one iteration, from its forward to the next one; or,
        without an iteration, of every iteration up to the last backward."""
        starts = record.forward_events
        if iteration is None or not 0 < iteration <= len(starts):
            return (starts[0] if starts else record.first_event), last_backward
        return starts[iteration - 1], starts[iteration] if iteration < len(starts) else last_backward

    def _called(self, module: nn.Module, args: Any) -> None:
        entry = self._modules.get(id(module))
        if entry is not None and entry[0]() is module:
            record, path = entry[1], entry[2]
            first = record.calls.get(path, (record.forwards,))[0]
            record.calls[path] = (first, record.forwards, user_site(1))

    def remove_hooks(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
