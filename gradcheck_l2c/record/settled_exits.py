"""Values that left autograd when their watched tensors had all learnt already: a ``.detach()`` or ``.data`` read
that `CutRecorder.cut` records nothing for (those weights got their gradients where meant). Kept weakly, in case a
backward on a value computed from them is refused for having no graph (an EWC Fisher estimate that averages each
batch's detached log-likelihood, run after the model trained): the refusing function holds them, and they are then
the cut to name. A loss detached after its own backward (a logged value) is never kept.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch

from gradcheck_l2c.record.events import Event, EventLog
from gradcheck_l2c.record.graph import grad_fn_of
from gradcheck_l2c.record.locations import Site, user_site
from gradcheck_l2c.record.reach import BACKWARD_ROOT, Reachability
from gradcheck_l2c.record.taint import Taint, TaintStore, fresh

_LIMIT = 1024  # values kept at most, the latest: a loop that keeps every detached output keeps the newest


class SettledExits:
    """The live values detached from tensors whose watched leaves had all learnt, with what the cut would have been."""

    def __init__(self, reach: Reachability, taints: TaintStore, events: EventLog) -> None:
        self.reach, self.taints, self.events = reach, taints, events
        # id(value) -> (the value, the watched keys it came from, the line, the kind, the op), while it lives
        self.kept: dict[int, tuple[weakref.ref, frozenset[int], Site | None, str, str]] = {}

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
        kept[ident] = (weakref.ref(out, lambda _, ident=ident: kept.pop(ident, None)), keys, user_site(2), kind, detail)

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
