"""Backward passes whose gradients no optimizer step read: every watched tensor a backward reached was
cleared by its optimizer's ``zero_grad()`` before that optimizer stepped again (the step ran before this
backward, as in a domain-adaptation loop that steps after the first loss only). Gradients the script reads itself
are used (SAM's first backward gives the direction its weights are moved along, then cleared before the step).

A GAN's generator loss also fills the discriminator's ``.grad`` that the next ``zero_grad()`` clears, but
the generator's step reads the rest of that backward: only a backward none of whose gradients any step
read counts, per line, and the judge wants it at a line where it happened more than once and never else.
A line whose gradients a step read at some runs and a ``zero_grad()`` cleared unread at as many others or more is
gradient accumulation undone: a ``zero_grad()`` in the micro-batch loop keeps only the last micro-batch for the step.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from gradcheck_l2c.record.locations import Site


@dataclass(eq=False)
class _Pending:
    site: Site | None
    keys: frozenset[int]  # replaced, never changed in place: a backward's keys are shared, not copied


@dataclass
class UnreadBackward:
    """A backward line whose gradients the steps never read: how often they were cleared unread, the
    optimizer that cleared them, its step that ran before them, and the ``zero_grad()`` that cleared them."""

    site: Site | None
    optimizer: str
    step_site: Site | None
    cleared_at: Site | None
    count: int = 0


@dataclass
class GradientUse:
    """Pending backwards (their unread keys), the backward lines some step read, and those never read."""

    pending: list[_Pending] = field(default_factory=list)
    read: dict[Site | None, int] = field(default_factory=dict)  # backward lines some step read -> how many times
    explained: set[Site | None] = field(default_factory=set)  # backward lines that missed a held tensor by a cut
    unread: dict[Site | None, UnreadBackward] = field(default_factory=dict)
    skipped: set[int] = field(default_factory=set)  # optimizers stepped with a closure: zero_grad runs inside
    last: _Pending | None = None  # the latest backward's entry, while it is pending

    def backward(self, site: Site | None, keys: frozenset[int]) -> None:
        """A backward called at ``site`` gave these watched tensors their gradient."""
        self.last = _Pending(site, keys) if keys else None
        if self.last is not None:
            self.pending.append(self.last)
            if len(self.pending) > 64:  # gradient accumulation over many micro-batches: keep the newest
                del self.pending[:32]

    def cut(self) -> None:
        """The backward just recorded missed tensors through a cut: that cut, not a step's order, explains what its
        steps missed. What it gave stays pending: cleared unread, it still counts against accumulation."""
        if self.last is not None:
            self.explained.add(self.last.site)

    def stepped(self, ident: int, keys: set[int], closure: bool) -> None:
        """An optimizer (``id`` ``ident``) holding ``keys`` steps: the pending backwards it reads are read."""
        if closure:
            self.skipped.add(ident)
        self._read_where(lambda given: not given.isdisjoint(keys))

    def read_by_script(self, key: int) -> None:
        """User code read the gradient of ``key`` and found one: the pending backwards that gave it are used."""
        self._read_where(lambda given: key in given)

    def _read_where(self, reads) -> None:
        still = []
        for backward in self.pending:
            if reads(backward.keys):
                self.read[backward.site] = self.read.get(backward.site, 0) + 1
            else:
                still.append(backward)
        self.pending = still

    def cleared(self, ident: int, keys: set[int], optimizer: str, step_site: Site | None,
                site: Site | None) -> None:
        """The optimizer's ``zero_grad()`` at ``site`` cleared ``keys``: a backward left with nothing unread
        was read by no step."""
        if ident in self.skipped or not self.pending:
            return
        still = []
        for backward in self.pending:
            if backward.keys & keys:
                backward.keys -= keys
                if not backward.keys:
                    entry = self.unread.get(backward.site)
                    if entry is None:
                        entry = self.unread[backward.site] = UnreadBackward(backward.site, optimizer, step_site, site)
                    entry.count += 1
                    continue
            still.append(backward)
        self.pending = still

    def module_cleared(self, module: Any, key_of: Callable[[Any], int | None], live: dict[int, Any],
                       site: Site | None) -> None:
        """A module's ``zero_grad()`` at ``site`` cleared its parameters' gradients: for each live optimizer record
        (``live``: id -> `OptimizerRecord`), as if its own ``zero_grad()`` had cleared those it holds."""
        if not self.pending:
            return
        keys = {key for key in map(key_of, module.parameters()) if key is not None}
        for ident, record in live.items():
            held = record.keys & keys
            if held and record.optimizer() is not None:
                self.cleared(ident, held, record.name, record.step_site, site)

    def never_read(self) -> list[UnreadBackward]:
        """Backward lines cleared unread more than once and never read by a step."""
        return [entry for site, entry in self.unread.items()
                if site not in self.read and site not in self.explained and entry.count > 1]

    def partly_read(self) -> list[tuple[UnreadBackward, int]]:
        """Backward lines a step read at some runs and that were cleared unread at as many others or more (two at
        least), with how often they were read: the steps see one micro-batch of each accumulation."""
        return [(entry, self.read[site]) for site, entry in self.unread.items()
                if site in self.read and entry.count > 1 and entry.count >= self.read[site]]
