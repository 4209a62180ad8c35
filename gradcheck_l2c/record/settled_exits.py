"""Values that left autograd when their watched tensors had all learnt already: a ``.detach()`` or ``.data`` read
that `CutRecorder.cut` records nothing for (those weights got their gradients where meant). Kept weakly, in case a
backward on a value computed from them is refused for having no graph (an EWC Fisher estimate that averages each
batch's detached log-likelihood, run after the model trained): the refusing function holds them, and they are then
the cut to name. A loss detached after its own backward (a logged value) is never kept. So are values a module
is given as attributes while gradients are off (a cache an evaluation filled), while the module holds them: a loss
computed from them in training has no graph either.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch

from gradcheck_l2c.record.entries import entry_ref
from gradcheck_l2c.record.events import Event, EventLog
from gradcheck_l2c.record.graph import grad_fn_of
from gradcheck_l2c.record.locations import Site, user_site
from gradcheck_l2c.record.reach import BACKWARD_ROOT, Reachability
from gradcheck_l2c.record.stacks import user_stack
from gradcheck_l2c.record.taint import Taint, TaintStore, fresh

_LIMIT = 1024  # values kept at most, the latest: a loop that keeps every detached output keeps the newest


class SettledExits:
    """The live values detached from tensors whose watched leaves had all learnt, with what the cut would have been."""

    def __init__(self, reach: Reachability, taints: TaintStore, events: EventLog) -> None:
        self.reach, self.taints, self.events = reach, taints, events
        # id(value) -> (the value, the watched keys it came from, the line, the kind, the op), while it lives
        self.kept: dict[int, tuple[weakref.ref, frozenset[int], Site | None, str, str]] = {}
        # id(value) -> (the value, the module, the attribute, the line that set it, the lines of its callers)
        self.cached: dict[int, tuple[weakref.ref, weakref.ref, str, Site | None, tuple[Site, ...]]] = {}

    def left(self, kind: str, detail: str, tensor: torch.Tensor, out: torch.Tensor) -> None:
        """``out`` left autograd from ``tensor`` at the user's line (the caller's caller called the op), and the cut
        recorded nothing: keep it when ``tensor`` has history from watched leaves that all learnt already and is not
        a loss a whole-graph backward ran from."""
        node = grad_fn_of(tensor)
        if node is None or BACKWARD_ROOT in node.metadata:
            return
        keys = self.reach(tensor) & self.taints.settled
        if not keys:
            return
        kept = self.kept
        if len(kept) >= _LIMIT:
            del kept[next(iter(kept))]
        ident = id(out)
        kept[ident] = (entry_ref(out, kept, ident), keys, user_site(2), kind, detail)

    def found_in(self, values: Any) -> Taint | None:
        """The cuts behind the kept values among ``values`` (or in the lists, tuples and dicts among them), recorded
        now as events, as one taint; None if there are none."""
        events: dict[int, Event] = {}
        for value in values:
            for item in value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) \
                    else (value,):
                entry = self.kept.get(id(item)) if isinstance(item, torch.Tensor) else None
                if entry is not None and entry[0]() is item:
                    _, keys, site, kind, detail = entry
                    for key in keys:
                        events.setdefault(key, self.events.record(kind, key, site, detail))
        return fresh(events) if events else None

    def kept_on(self, module: Any, name: str, value: Any, site: Site | None) -> None:
        """User code set ``value`` (a tensor, or a list or tuple of them) as attribute ``name`` of ``module`` at
        ``site`` while gradients were off: keep its float tensors weakly, with the lines that called that code."""
        tensors = [item for item in (value if isinstance(value, (list, tuple)) else (value,))
                   if type(item) is torch.Tensor and not item.requires_grad and item.is_floating_point()]
        if not tensors:
            return
        callers, cached, holder = tuple(entry[2] for entry in user_stack(2)[1:]), self.cached, weakref.ref(module)
        for tensor in tensors:
            if len(cached) >= _LIMIT:
                del cached[next(iter(cached))]
            ident = id(tensor)
            cached[ident] = (entry_ref(tensor, cached, ident), holder, name, site,
                             callers)

    def cached_in_use(self, key_of: Any) -> Taint | None:
        """The values of `kept_on` that their modules still hold, as ``no_grad`` cuts of the watched parameters of
        those modules (what computed them), recorded now as one taint; None if there are none."""
        events: dict[int, Event] = {}
        for ref, holder, name, site, callers in list(self.cached.values()):
            tensor, module = ref(), holder()
            held = module.__dict__.get(name) if module is not None else None
            if tensor is None or not (held is tensor or isinstance(held, (list, tuple)) and any(
                    item is tensor for item in held)):
                continue
            for key in (key for key in map(key_of, module.parameters()) if key is not None):
                events.setdefault(key, self.events.record(
                    "no_grad", key, site, f"{type(module).__name__}.{name} = ...", callers=callers,
                    handed=(False,) * (len(callers) + 1), library=(), kept=name))
        return fresh(events) if events else None
