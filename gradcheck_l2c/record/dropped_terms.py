"""Loss terms dropped before any backward ran through them: a scalar with history that user code made from tensors
the same step's backward trains, and that died unread and unused (rebound in a loop that never sums it, left behind
in a function that returned another value), so it trained nothing (``x, _kl = layer(x)`` never added to ``kl``).

A scalar is remembered while it lives (a weak reference: its lifetime stays the script's); a backward that starts
while it lives either has it for a root or puts a pre-hook on its node, which tells whether that backward ran through
it (a loss made and differentiated at every step takes no hook). When it dies unread and no backward ran through it, a
marker in its node's metadata tells whether the node outlived it (an op took it into a loss) or went with it
(nothing used it); the backward of its own step judges those, by where that backward's forward began.
"""
from __future__ import annotations

import collections
import dis
import os
import sys
import weakref
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.locations import LIBRARY, USER, Site, frame_kind, frame_site, user_frame
from gradcheck_l2c.record.torch_internals import sequence_nr
from gradcheck_l2c.record.watch import WatchRegistry

_TORCH = os.path.dirname(torch.__file__) + os.sep
_MARK = "gradcheck_dropped"  # node metadata: a marker that goes when the node does
_WAITING = 16  # dropped terms kept for the next backward at most, the latest
_TOLD = 2  # judgments per line that made a term: a term dropped at every step is told once seen twice
_LEAVES = 256  # nodes looked at below a dropped term for the watched tensors it was made from
_READ = 32  # nodes looked at below a value read (detached, logged) for the live terms it was computed from
_GRAPH = 100_000  # nodes looked at in a backward's graph for where its forward began
_STEPS = 4  # backwards remembered for terms dropped after them
_UNDIFFERENTIATED = 16  # lines remembered that made scalars before any backward ran
#: Where a frame stands while a function it called returns (its locals go as the callee's frame is cleared).
_CALLS = frozenset(dis.opmap[name] for name in ("CACHE", "PRECALL", "CALL", "CALL_FUNCTION_EX") if name in dis.opmap)


class _Marker:
    """Kept only by a node's metadata: a weak reference to it dies with the node."""

    __slots__ = ("__weakref__",)


class _Term(weakref.ref):
    """One scalar, weakly held (its death calls `DroppedTerms.died`): its node while it lives, the line that made it,
    and whether it was read (logged, printed, detached) or differentiated; once dead, where it died and whether its
    node went with it. One object per scalar, its fields set by `DroppedTerms.made`: a loop makes a loss per step."""

    __slots__ = ("key", "node", "made", "code", "window", "whole", "read", "ran", "dropped", "returned", "late",
                 "sequence", "op", "below", "marker", "keys")

    def ran_through(self, *_: Any) -> None:
        """The node's pre-hook: a backward runs through it. Returns None, so gradients stay as they are."""
        self.ran = True


@dataclass(frozen=True)
class DroppedTerm:
    """A term nothing used and no backward ran through: where it was made and dropped, the op that made it, the
    watched tensors it was made from, and, when it died as a function returned, the name of the function that made
    it (when the line called that function, the judge names its ``return``)."""

    made: Site
    dropped: Site
    op: str
    keys: frozenset[int]
    returned: str | None  # it died as a function returned: the name of the function that made it
    late: bool  # it died after its own step's backward (rebound at the next step)
    loss: Site | None  # the line that made the loss of that backward, when user code made it


class DroppedTerms:
    """Live scalars with history made by user code, and the dropped ones the backwards found (``found``)."""

    def __init__(self, registry: WatchRegistry) -> None:
        self.registry = registry
        self.live: dict[int, _Term] = {}
        self._on_death = self.died  # every term's death callback: one bound method, made once
        self.dying: list[_Term] = []  # died unread: did their nodes go with them?
        self.waiting: list[_Term] = []  # their nodes went: for the next backward to judge
        self.found: dict[tuple[Site, Site], tuple[DroppedTerm, int]] = {}
        self.told: dict[Site, int] = {}
        self.backwards = 0
        #: the latest backwards (by count) -> their graph's first node and the line of their loss: kept when a term
        #: made before one may be dropped only after it (rebound at the next step)
        self.steps: dict[int, tuple[int, Site | None]] = {}
        self.suspects: set[Site] = set()  # lines whose term was dropped after its own backward, seen too late
        self.inside: set[int] = set()  # the nodes right below this step's dropped terms: no dropped terms of their own
        self._makers: dict[str, bool | None] = {}  # file -> `_passes`
        self.fresh: list[_Term] = []  # made since the last backward started: it hooks those still alive
        # before any backward ran: the lines that made scalars -> how many, and the watched keys the first came from
        self.undifferentiated: dict[Site, tuple[int, frozenset[int]]] = {}

    def made(self, out: torch.Tensor, whole: bool = False) -> None:
        """``out``, a scalar with history, was just made (the caller's caller called the op; ``whole``: a custom
        Function's only output, of any shape): remember it when user code made it directly or through torch, not
        inside another library (a model's own auxiliary loss)."""
        if self.dying:
            self._settle()
        key = id(out)
        term = self.live.get(key)
        if term is not None and term() is out:
            return
        frame: FrameType | None = sys._getframe(2)
        makers = self._makers
        while frame is not None:
            filename = frame.f_code.co_filename
            if filename not in makers:
                makers[filename] = _passes(filename)
            passes = makers[filename]
            if passes is None:
                break
            if not passes:
                return
            frame = frame.f_back
        if frame is None:
            return
        node = out.grad_fn
        if node is None:
            return
        term = _Term(out, self._on_death)
        term.key, term.node, term.made, term.code = key, node, frame_site(frame), frame.f_code
        term.window = self.backwards  # the backwards that had ended when it was made: the next one is its own
        term.whole = whole  # a custom Function's output: discarded at its own line, it is no temporary read there
        term.read = term.ran = term.late = False  # ran: a backward ran through its node (its root, or summed into it)
        term.sequence = -1  # its node's place in the order autograd made them (-1: unknown), read once needed
        term.dropped = term.returned = term.marker = None  # where it died; the function it died returning from
        term.op, term.below, term.keys = "", (), frozenset()
        self.live[key] = term
        self.fresh.append(term)
        if not self.backwards:
            self._before_backward(term.made, node)

    def _before_backward(self, made: Site, node: Any) -> None:
        """A scalar made before any backward ran: how often its line made one, and the watched tensors the first
        was computed from (a loop that makes its loss at every step and never differentiates it)."""
        seen = self.undifferentiated.get(made)
        if seen is not None:
            self.undifferentiated[made] = (seen[0] + 1, seen[1])
        elif len(self.undifferentiated) < _UNDIFFERENTIATED:
            self.undifferentiated[made] = (1, _watched_below(self.registry, [node]))

    def backward_starts(self, roots: Any) -> None:
        """A backward is about to run from ``roots`` (a tuple of tensors): a live term it starts from is
        differentiated; the other live terms made since the last one get a pre-hook on their node, which tells if
        it runs through them."""
        fresh, self.fresh = self.fresh, []
        if not fresh:
            return
        starts = set()  # a loop, not a set comprehension: one call fewer at every backward
        for root in roots or ():
            if isinstance(root, torch.Tensor):
                starts.add(id(root.grad_fn))
        for term in fresh:
            node = term.node
            if node is None or term.read:
                continue  # gone, or read: never told
            if id(node) in starts:
                term.ran = True
                continue
            try:
                node.register_prehook(term.ran_through)
            except RuntimeError:  # a node that takes no hooks: nothing to tell of it
                term.read = True  # never told, as if read

    def read(self, tensor: torch.Tensor) -> None:
        """User code read the values of ``tensor`` (``.item()``, printed, detached, under no_grad): a logged number,
        not a dropped term; so are the live terms it was computed from."""
        term = self.live.get(id(tensor))
        if term is not None and term() is tensor:
            term.read = True
        node = getattr(tensor, "grad_fn", None)
        unread = {sequence_nr(t.node) or -1: t for t in self.live.values() if not t.read} if node is not None else None
        if unread:  # a value computed from live terms was read (a ratio of two losses, detached): they were used
            for below in _nearest(node, _READ):
                term = unread.get(sequence_nr(below))
                if term is not None:
                    term.read = True

    def died(self, term: _Term) -> None:
        """A remembered scalar died. Unread, its node gets a marker and loses the reference kept here: whether the node
        outlives the tensor (an op took it) is known once the tensor is gone (`_settle`)."""
        self.live.pop(term.key, None)
        node, term.node = term.node, None
        if term.read or term.ran or node is None:
            return
        term.sequence = sequence_nr(node) or -1
        frame = user_frame(1)  # the frame the scalar died in, whose release of it called this
        if frame is None:
            return
        term.dropped = frame_site(frame)
        if frame.f_code.co_code[frame.f_lasti] in _CALLS and not _running(frame, term.code):
            term.returned = term.code.co_name
        term.late = term.window < self.backwards
        if term.late != (term.dropped == term.made) and (term.late or not term.whole):
            # gone at the line that made it, in its own step: a temporary read in a way no op shows (a comparison,
            # ``.requires_grad``), unless a custom Function's output, discarded; gone after its step elsewhere: a
            # value returned beside the loss, unused (a metric). Of those gone after their step, only one made anew
            # at its own line every step and never used (a term left out of the loss) is told
            return
        term.op, term.below = node.name(), node.next_functions
        marker = _Marker()
        node.metadata[_MARK] = marker
        term.marker = weakref.ref(marker)
        self.dying.append(term)

    def _settle(self) -> None:
        """The scalars that died since the last look: those whose nodes went with them were used by nothing. One that
        died before its own backward waits for it; one rebound after it is judged by what that backward was."""
        dying, self.dying = self.dying, []
        for term in dying:
            below, term.below = term.below, ()
            if term.marker() is not None:
                continue  # an op took it (summed into a loss, say): its backward is the loss's
            roots = [child for child, _ in below if child is not None]
            taken = term.sequence in self.inside  # by a term that went unused itself (into a discarded output)
            self.inside.update(order for order in map(sequence_nr, roots) if order is not None)
            if taken or self.told.get(term.made, 0) >= _TOLD:
                continue
            term.keys = _watched_below(self.registry, roots)
            if not term.keys:
                continue
            if term.window == self.backwards:
                self.waiting.append(term)
            elif term.window + 1 in self.steps:
                self._judge(term, self.steps[term.window + 1])
            else:
                self.suspects.add(term.made)
        del self.waiting[:-_WAITING]

    def backward_ended(self, roots: list[torch.Tensor], reached: frozenset[int]) -> None:
        """A backward ended: the dropped terms its own forward made (after the first node of its graph) are told. The
        others belong to another stretch (an evaluation's losses)."""
        if self.dying:
            self._settle()
        self.backwards += 1
        self.inside.clear()
        waiting, self.waiting = self.waiting, []
        suspects = self.suspects and any(t.made in self.suspects and not t.read and t.window + 1 == self.backwards
                                         for t in self.live.values())
        if not (waiting or suspects) or not reached:
            return
        loss = self.live.get(id(roots[0])) if len(roots) == 1 else None
        step = (_forward_began(roots), loss.made if loss is not None and loss() is roots[0] else None)
        self.steps[self.backwards] = step
        for old in [n for n in self.steps if n <= self.backwards - _STEPS]:
            del self.steps[old]
        for term in waiting:
            self._judge(term, step)

    def _judge(self, term: _Term, step: tuple[int, Site | None]) -> None:
        """A dropped term, by the backward of its own step: told if that backward's forward made it."""
        began, loss = step
        if term.sequence > began and self.told.get(term.made, 0) < _TOLD:
            self.told[term.made] = self.told.get(term.made, 0) + 1
            index = (term.made, term.dropped)
            fact, count = self.found.get(index, (None, 0))
            self.found[index] = (fact or DroppedTerm(term.made, term.dropped, term.op, term.keys, term.returned,
                                                     term.late, loss),
                                 count + 1)

    def end(self) -> None:
        """The trace ends: forget the live scalars (their references go, so no callback comes) and the dead ones."""
        for term in self.live.values():
            term.node = None  # the node's pre-hook holds the term: the cycle through torch's C++ goes
        self.live.clear()
        for term in self.dying:
            term.below = ()
        self.dying, self.waiting, self.fresh = [], [], []


def _watched_below(registry: WatchRegistry, roots: list[Any]) -> frozenset[int]:
    """The watched leaves among the nodes nearest ``roots`` (a term's graph, its first ``_LEAVES`` nodes)."""
    key_of = registry.key_of
    return frozenset(k for k in (key_of(n.variable) for n in graph.iter_nodes(roots, _LEAVES)
                                 if hasattr(n, "variable")) if k is not None)


def _passes(filename: str) -> bool | None:
    """Whether an op called from this file is looked through for the user line that called it (torch, the standard
    library, this tool), made there (None: user code) or inside another library (False)."""
    kind = frame_kind(filename)
    if kind == USER:
        return None
    if kind == LIBRARY and (filename.startswith(_TORCH) or f"{os.sep}site-packages{os.sep}" not in filename):
        return True
    return kind != LIBRARY


def _running(frame: FrameType | None, code: Any) -> bool:
    """Whether a frame of ``code`` is still on the stack from ``frame`` outwards."""
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False


def _nearest(node: Any, limit: int) -> list[Any]:
    """The ``limit`` nodes nearest ``node`` in its graph, breadth first (the terms a read value was computed from sit
    a few ops below it, beside deep paths into the model)."""
    found, seen, queue = [], {node}, collections.deque([node])
    while queue and len(found) < limit:
        current = queue.popleft()
        found.append(current)
        for child, _ in current.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                queue.append(child)
    return found


def _forward_began(roots: list[torch.Tensor]) -> int:
    """The first autograd node of a backward's graph (by sequence number): where the forward it differentiates
    began. Accumulators of leaves carry no number of their own."""
    nodes = graph.iter_nodes(graph.grad_roots([r for r in roots if isinstance(r, torch.Tensor) and r.requires_grad]),
                             _GRAPH)
    orders = (sequence_nr(n) for n in nodes if not hasattr(n, "variable"))
    return min((order for order in orders if order is not None), default=sys.maxsize)
