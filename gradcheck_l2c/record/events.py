"""Events: what the tracer saw happen to a watched tensor's values, deduplicated by place."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypedDict

from gradcheck_l2c.record.locations import Site

#: The detail of the ``unused_parameter`` event a backward started from a watched leaf records (``param.backward(g)``:
#: no graph behind it); the judge's `leaf_backward` names it for the tensors an optimizer holds beside that leaf.
LEAF_BACKWARD = "backward() on a leaf"
#: The detail of a ``state_dict_reload``: ``copy_`` with gradients on into a tensor that shares a parameter's memory.
INTO_ALIAS = ".copy_() into an alias"
#: The detail of a ``no_update`` event: ``load_state_dict`` given the module's own state, copied onto itself.
ONTO_ITSELF = "load_state_dict() of its own state"


class EventExtra(TypedDict, total=False):
    """The facts some kinds of event carry besides their place and operation, given when recorded."""

    rebuilds: bool  # no_grad: the op rebuilt a watched leaf out of place (an update step, `w = w - lr * g`)
    spent: bool  # item: a number `.item()` returned came back into torch or was used as a tensor (`taint.spend`)
    function: bool  # no_grad: a custom autograd Function's forward used the watched leaf without taking it as input
    called: str  # no_grad: the library function the user's line called that ran the op (``Normal.sample``)
    kept: str  # no_grad: the module attribute a value computed with gradients off was kept in, and used from
    callers: tuple[Site, ...]  # no_grad: the lines of the user frames that called the cut's function, innermost first
    handed: tuple[bool, ...]  # no_grad: for the cut's frame and each of those, whether its function got a tensor
    # requiring grad
    given: str  # tensor_rewrap: what was given ("tensor", "tensors", "array", "numbers", "number")
    requires_grad: bool  # tensor_rewrap: whether the new tensor was made with requires_grad=True
    came_from: tuple[str, Site | None] | None  # tensor_rewrap: the cut the values came through, and its line
    output: str  # non_differentiable: "bool" (a mask), "integer" (indices, a cast), "step" (round, sign), "sample"
    test: bool  # non_differentiable: the "bool" is one element, a test that control flow reads (`if norm == 0:`)
    snapshot: Site | None  # state_dict_alias: where the stale state_dict() snapshot was taken
    outer: str  # module_in_forward: the class whose forward built the module
    built_after: int  # module_in_forward: how many optimizers had been built when it was first built
    saver: str  # inplace_saved: the autograd node that saved the tensor
    saver_site: str | None  # inplace_saved: where that node was made ("train.py:12")
    symptom: Site | None  # inplace_saved: the backward that failed
    optimizer: str  # inplace_saved: the optimizer whose step wrote in place; optimizer "erased", "no_backward": class
    size: int  # optimizer "erased", "no_backward": how many parameters it holds
    step: Site | None  # optimizer "erased": the step() that found no gradient (the event sits at the zero_grad())
    first: str  # optimizer (two optimizers): the class of the optimizer that held the parameter first
    records: tuple[Any, Any]  # optimizer (two optimizers): the two OptimizerRecords


@dataclass(eq=False)
class Event:
    """One kind of thing happening at one line to one watched tensor's values, ``count`` times.

    ``detail`` names the operation as the user wrote it (``.item()``, ``load_state_dict()``,
    ``argmax``); ``source`` is the autograd node the values had just before a cut, kept so the
    renderer can draw where the path ends.
    """

    kind: str
    key: int
    site: Site | None
    detail: str
    order: int
    count: int = 1
    source: Any = None
    extra: EventExtra = field(default_factory=EventExtra)  # type: ignore[arg-type]

    @property
    def sampled_by(self) -> str:
        """The distribution's ``sample`` whose own no_grad ran this cut, called from the user's line (``Normal.sample``:
        ``rsample()`` keeps the gradient); "" for any other."""
        called = self.extra.get("called", "")
        return called if called.rpartition(".")[2] == "sample" else ""


class EventLog:
    """All events of one trace, one per (kind, tensor, place, operation)."""

    def __init__(self) -> None:
        self._events: dict[tuple, Event] = {}
        self._sourced: dict[int, list[Event]] = {}  # watched key -> its events that hold an autograd node
        # settled keys whose events still hold nodes, because a live value named them then; and how many tainted
        # values the taint store had let go when they were last looked at
        self._unreleased: set[int] = set()
        self._swept = 0

    def record(self, kind: str, key: int, site: Site | None, detail: str, source: Any = None,
               **extra: Any) -> Event:
        """The event of this kind, tensor, place and operation, made now or counted once more; a fact that
        the first time did not know (``extra``, ``source``) is added, none is changed."""
        index = (kind, key, site, detail)
        event = self._events.get(index)
        if event is None:
            event = Event(kind, key, site, detail, len(self._events), source=source, extra=EventExtra(**extra))
            self._events[index] = event
            if source is not None:
                self._sourced.setdefault(key, []).append(event)
        else:
            event.count += 1
            if source is not None and event.source is None:
                event.source = source
                self._sourced.setdefault(key, []).append(event)
            for name, value in extra.items():
                event.extra.setdefault(name, value)  # type: ignore[misc]
        return event

    def settle(self, key: int, missed: Any, taints: Any) -> None:
        """Watched tensor ``key`` got its gradient where it was meant to: once no missed chain names it and no
        live value carries one, no cut of it can be drawn any more, and its events stop holding the graphs
        their values had (a loop that logs ``loss.item()`` before each backward of a fresh leaf would keep
        every step's graph and input alive). A key a live value still named is looked at again when the taint
        store lets values go: the number ``loss.item()`` gave before the step names every parameter, and is let
        go only when the last of them settles."""
        if key in self._sourced:
            self._unreleased.add(key)
        elif not self._unreleased:  # nothing waits (a fresh leaf per step, its events holding no values)
            self._swept = taints.swept
            return
        if taints.swept != self._swept:
            self._swept = taints.swept
            waiting = list(self._unreleased)
        else:
            waiting = [key] if key in self._unreleased else []
        for waiting_key in waiting:
            if waiting_key not in self._sourced or waiting_key not in taints.settled:  # a new phase unsettled it: its
                self._unreleased.discard(waiting_key)  # next settling looks again
            elif waiting_key not in missed and not taints.mentions(waiting_key):
                self._unreleased.discard(waiting_key)
                self.release_sources(waiting_key)

    def release_sources(self, key: int) -> None:
        """Let go of the autograd nodes (and the graphs behind them) that ``key``'s events hold, once no graph
        drawn of a missed gradient can show them (`settle`). Zero-derivative cuts keep theirs:
        only they can still be counted again on a settled tensor, with its first node."""
        kept = []
        for event in self._sourced.pop(key, ()):
            if event.kind == "non_differentiable":
                kept.append(event)
            else:
                event.source = None
        if kept:
            self._sourced[key] = kept

    def has(self, kind: str, key: int, site: Site | None, detail: str) -> bool:
        """Whether this event was recorded already (a fact costly to gather is gathered once)."""
        return (kind, key, site, detail) in self._events

    def for_key(self, key: int) -> list[Event]:
        return [event for event in self._events.values() if event.key == key]

    def of_kind(self, *kinds: str) -> list[Event]:
        return [event for event in self._events.values() if event.kind in kinds]

    def __iter__(self) -> Iterator[Event]:
        return iter(list(self._events.values()))

    def __len__(self) -> int:
        return len(self._events)
