"""Values that left for NumPy and may come back: NumPy's own arithmetic and indexing make arrays the trace cannot
mark, so a tensor rebuilt from NumPy data, or a NumPy number added to a tensor, is tied to the tainted values that
left for NumPy in the function that does it (or one it called) since the last backward started: the round trip
that cuts a loss term (``torch.tensor(np.mean(out.detach().numpy() - gt), requires_grad=True)``,
``torch.from_numpy(out.numpy()[idx])``, ``np_loss + ce``). An inference, not a proof: NumPy data made elsewhere
is not tied, and a value with a gradient of its own makes no dead term whatever it is tied to.
"""
from __future__ import annotations

from types import CodeType
from typing import Any

from gradcheck_l2c.record.events import EventLog
from gradcheck_l2c.record.locations import Site, user_frame
from gradcheck_l2c.record.stacks import user_stack
from gradcheck_l2c.record.taint import Taint, TaintStore

_LIMIT = 16  # the latest exits kept per window: a loop that converts every sample keeps the newest


def numpy_made(items: list[Any]) -> bool:
    """Whether data given to ``torch.tensor`` came out of NumPy (an array, or NumPy numbers among its items)."""
    return any(type(item).__module__ == "numpy" for item in items)


class NumpyExits:
    """The tainted values that left for NumPy since the last backward started, with the user frames then running."""

    def __init__(self, taints: TaintStore, events: EventLog) -> None:
        self.taints, self.events = taints, events
        # (the taint, the (id, code) of each user frame then running), oldest first; the interceptor reads it
        self.exits: list[tuple[Taint, frozenset[tuple[int, CodeType]]]] = []

    def __bool__(self) -> bool:
        """Whether any tainted values left for NumPy since the last backward started."""
        return bool(self.exits)

    def left(self, taint: Taint | None, label: str, site: Site | None, depth: int) -> Taint | None:
        """Values carrying ``taint`` became a NumPy array (``label``: ``.numpy()``) at ``site``, in the user code
        ``depth`` frames above the caller: the taint the array carries, where a cut made on this very line
        (``x.detach().numpy()``) is reported as a ``numpy`` one."""
        if taint is None:
            return None
        chains = {}
        for key, chain in taint.chains.items():
            last = chain[-1]
            if last.site == site and last.kind in ("detach", "data_attr"):
                chain = chain[:-1] + (self.events.record("numpy", key, site, last.detail + label, source=last.source),)
            chains[key] = chain
        taint = Taint(chains)
        self.exits.append((taint, frozenset((ident, code) for ident, code, _ in user_stack(depth + 1))))
        del self.exits[:-_LIMIT]
        return taint

    def backward_starts(self) -> None:
        """A backward starts: what left before it was used (or not) by the loss it differentiates."""
        self.exits.clear()

    def came_back(self, depth: int) -> Taint | None:
        """The taint of the latest values that left for NumPy in the user function running ``depth`` frames above
        the caller, or in one it called, while it still runs; None when none did (or their taint matters no more)."""
        if not self.exits:
            return None
        frame = user_frame(depth + 1)
        if frame is None:
            return None
        running = (id(frame), frame.f_code)
        for taint, frames in reversed(self.exits):
            if running in frames and self.taints.live(taint):
                return taint
        return None
