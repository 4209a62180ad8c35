"""The questions the judge may ask of a finished trace: facts only, read-only, typed.

Like coverage.py's reporters reading ``CoverageData`` and never the live collector, the judge reads a
`TraceRecord` and never the parts that recorded it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.autograd_errors import ErrorRecorder
from gradcheck_l2c.record.backwards import BackwardLog
from gradcheck_l2c.record.ddp import DdpLog
from gradcheck_l2c.record.empty_reads import EmptyReads
from gradcheck_l2c.record.events import EventLog
from gradcheck_l2c.record.facts import (
    AutogradError,
    Chain,
    DdpRecord,
    DroppedTerm,
    Event,
    InplaceNote,
    NonLeafRead,
    OptimizerRecord,
    PendingGraph,
    Site,
    StepMiss,
    Taint,
    Unregistered,
    Watched,
    WatchSpec,
)
from gradcheck_l2c.record.gradstats import GradSeries, GradStats
from gradcheck_l2c.record.nonfinite import NanWatch, NonFinite
from gradcheck_l2c.record.optimizers import OptimizerLog
from gradcheck_l2c.record.scope import Clock, Scope
from gradcheck_l2c.record.selection import selected
from gradcheck_l2c.record.source_sites import module_site
from gradcheck_l2c.record.taint import TaintStore
from gradcheck_l2c.record.terms import TakenGradient, TermLog
from gradcheck_l2c.record.gradient_use import GradientUse
from gradcheck_l2c.record.updates import Unchanged
from gradcheck_l2c.record.module_flags import MisleadingFlag
from gradcheck_l2c.record.unregistered import UnregisteredLog
from gradcheck_l2c.record.watch import WatchRegistry
from gradcheck_l2c.record.writes import WriteLog


@dataclass(frozen=True)
class TraceRecord:
    """A read-only view of one trace's record, over the parts that kept it."""

    spec: WatchSpec
    _registry: WatchRegistry
    _events: EventLog
    _taints: TaintStore
    _clock: Clock
    _scope: Scope
    _backwards: BackwardLog
    _optimizers: OptimizerLog
    _writes: WriteLog
    _unregistered: UnregisteredLog
    _ddp: DdpLog
    _terms: TermLog
    _errors: ErrorRecorder
    _health: NanWatch | None = None
    _grad_stats: GradStats | None = None

    def watched(self) -> list[Watched]:
        """Every watched tensor, in the order it was first watched (its key)."""
        return self._registry.all

    def watched_at(self, key: int) -> Watched:
        return self._registry.all[key]

    def selected(self) -> tuple[set[int], list[str]]:
        """Keys of the tensors the user asked about, and the patterns that matched nothing."""
        return selected(self._registry, self.spec)

    def defined_at(self, watched: Watched) -> Site | None:
        """Where the tensor was made, or else where the class of the module holding it is defined."""
        module = watched.owner.module() if watched.site is None and watched.owner is not None else None
        return watched.site if watched.site is not None else module_site(module) if module is not None else None

    def leaf_names(self, node: Any) -> list[str]:
        """Names of the watched leaves an autograd node's graph reaches (for "the gradient went to ...")."""
        return [w.name for w in map(self._registry.get, graph.leaf_tensors([node])) if w is not None]

    @property
    def backwards(self) -> int:
        """How many backward passes of the traced thread ended."""
        return self._clock.backwards

    @property
    def events_at_backward(self) -> int:
        """How many events had been recorded when the last backward ended."""
        return self._backwards.events_at_backward

    def events(self, *kinds: str) -> list[Event]:
        """The events of these kinds (all events without kinds), in the order they first happened."""
        return self._events.of_kind(*kinds) if kinds else list(self._events)

    def events_for(self, key: int) -> list[Event]:
        return self._events.for_key(key)

    def missed(self, key: int) -> dict[Chain, int] | None:
        """The chains of cuts by which backward passes missed a watched tensor, with how often."""
        return self._backwards.missed.get(key)

    def step_miss(self, key: int) -> StepMiss | None:
        """The optimizer steps that found no gradient for a tensor a cut kept it from."""
        return self._optimizers.misses.get(key)

    def consumer(self, key: int) -> tuple[str, Site | None] | None:
        """The autograd node taking a watched leaf in the first graphs, and a user's custom Function's ``return``."""
        return self._backwards.consumers.get(key)

    def called_instead(self, key: int) -> tuple[str, str, Site] | None:
        """A never-called module's attribute, its twin's, and the twin's second call (`WatchRegistry.instead`)."""
        return self._registry.instead.get(key)

    def gate(self, key: int) -> tuple[Site, str, int] | None:
        """(line, tensor tested, input position) where a custom backward left an input None on a requires_grad test."""
        return self._backwards.gates.get(key)

    def differentiated(self, key: int) -> bool:
        """Whether a ``backward(inputs=...)`` or ``autograd.grad`` was asked for a watched leaf's gradient."""
        return key in self._backwards.differentiated

    def under_derivative(self, key: int) -> bool:
        """Whether a watched leaf was in the graph of ``autograd.grad(create_graph=True)`` taken to other inputs."""
        return key in self._backwards.under_derivative

    @property
    def dead_ends(self) -> list[Taint]:
        """Values whose every path was cut (a ``.grad`` read or backward on them found nothing)."""
        return self._backwards.dead_ends

    @property
    def graphless(self) -> list[Site | None]:
        """Backward calls that raised because nothing in their loss required grad."""
        return self._backwards.graphless

    @property
    def autograd_errors(self) -> list[AutogradError]:
        """Autograd's own errors, in the order first raised (a script that caught one and went on included)."""
        return list(self._errors.errors.values())

    @property
    def graphs(self) -> list[PendingGraph]:
        return self._backwards.graphs

    @property
    def dropped_terms(self) -> dict[tuple[Site, Site], tuple[DroppedTerm, int]]:
        """(where a loss term was made, where it was dropped) -> the fact and how many backwards found it."""
        return self._terms.dropped.found

    @property
    def undifferentiated(self) -> dict[Site, tuple[int, frozenset[int]]]:
        """Before any backward: a line that made scalars with history -> how many, and the first's watched keys."""
        return self._terms.dropped.undifferentiated

    @property
    def dead_terms(self) -> dict[tuple[Site | None, int, Chain], int]:
        """(where a dead loss term was added, the watched key it was cut from, the cuts) -> how many backwards."""
        return self._terms.found

    @property
    def first_order_steps(self) -> dict[tuple[Site | None, int, Chain], int]:
        """(where ``w - lr * g`` stepped ``w`` on a gradient without graph, ``w``'s key, the cut) -> backwards through it."""
        return self._terms.first_order_found

    @property
    def taken_gradients(self) -> list[TakenGradient]:
        """Gradients taken with ``create_graph=True``, per user line, and whether a backward ran through them."""
        return list(self._terms.taken.values())

    @property
    def nonleaf_reads(self) -> list[NonLeafRead]:
        return self._backwards.nonleaf_reads

    @property
    def empty_reads(self) -> EmptyReads:
        """``.grad`` reads that found None on tensors the script names, for those it froze or made frozen."""
        return self._backwards.empty_reads

    @property
    def optimizers(self) -> list[OptimizerRecord]:
        return self._optimizers.records

    @property
    def gradient_use(self) -> GradientUse:
        """Which backward lines' gradients the steps read, and which a ``zero_grad()`` cleared unread."""
        return self._optimizers.use

    @property
    def unchanged(self) -> list[Unchanged]:
        """Stepped parameters (with their gradient) whose values never changed over the run."""
        return self._optimizers.updates.found

    @property
    def inplace_notes(self) -> dict[tuple[Site | None, str], InplaceNote]:
        return self._writes.notes

    @property
    def unregistered(self) -> dict[tuple[str, str], Unregistered]:
        return self._unregistered.found

    @property
    def misleading_flags(self) -> list[MisleadingFlag]:  # ``module.requires_grad = ...`` (`module_flags`)
        return self._unregistered.flags.misleading

    @property
    def non_finite(self) -> list[NonFinite]:
        """Where NaN/Inf values were born (``--nan``), in the order they were; the first NaN ends the list."""
        return list(self._health.births) if self._health is not None else []

    @property
    def grad_series(self) -> list[GradSeries]:
        """``--grad-stats``: each watched parameter's gradient and weight norms, backward after backward."""
        return list(self._grad_stats.series.values()) if self._grad_stats is not None else []

    @property
    def losses(self) -> list[float]:
        """``--grad-stats``: the loss of each backward whose root was one number."""
        return list(self._grad_stats.losses) if self._grad_stats is not None else []

    @property
    def untraced(self) -> dict[tuple[str, Site | None], int]:
        """Backward passes of threads the trace does not cover: (thread, site) -> count."""
        return self._scope.untraced

    @property
    def children(self) -> dict[tuple[Site | None, str], int]:  # untraced child processes: (start, why) -> count
        return self._scope.children

    @property
    def ddp(self) -> list[DdpRecord]:  # the DistributedDataParallel wrappers of the run
        return self._ddp.records

    def ddp_window(self, record: DdpRecord, iteration: int | None) -> tuple[int, int]:
        """The events (as a range of orders) of one DDP iteration (or of all up to the last backward)."""
        return self._ddp.window(record, iteration, self._backwards.events_at_backward)

    def ddp_called(self, record: DdpRecord, path: str, iteration: int | None) -> Site | None | bool:
        return self._ddp.called(record, path, iteration)  # where a module was called in an iteration; False: never

    def taint_of(self, value: Any) -> Taint | None:  # the cuts a live value (a tensor, a number) went through
        return self._taints.get(value)


def made_at(node: Any, limit: int = 64) -> Site | None:
    """The user line that made an autograd node, or else the nearest node behind it whose line is known."""
    for seen, child in enumerate(graph.iter_nodes([node], graph.SAFE_WALK)):
        site = child.metadata.get("gradcheck_site")
        if site:
            return Site(*site)
        if seen >= limit:
            break
    return None
