"""A backward started from a leaf (``param.backward(g)``, a last bias "trained" with a gradient computed elsewhere):
no graph runs behind it, so it only sets that leaf's ``.grad``. The tensors an optimizer holds beside that leaf never
take part in a loss; that backward is the line to change, not the cuts of other losses their values met."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.record.facts import LEAF_BACKWARD, Event, Watched
from gradcheck_l2c.records import Finding


def leaf_backwards(record: Any) -> list[Event]:
    """The events of the backwards started from a watched leaf (looked up once per judging, not per tensor)."""
    return [event for event in record.events("unused_parameter") if event.detail == LEAF_BACKWARD]


def leaf_backward_finding(run: Any, watched: Watched, leaves: list[Event]) -> Finding | None:
    """The finding for ``watched``, which got no gradient, when an optimizer holding it also holds a leaf a backward
    started from (one of ``leaves``, `leaf_backwards`); else None."""
    leaves = [event for event in leaves if event.key != watched.key]
    if not leaves:
        return None
    held = [record.keys for record in run.record.optimizers if watched.key in record.keys]
    event = next((e for e in leaves if any(e.key in keys for keys in held)), None)
    if event is None:
        return None
    root = run.name(event.key)
    return run.finding(
        "unused_parameter", "error" if run.expected(watched) else "warning", watched.name, event.site,
        f"{watched.name} never took part in a loss: the backward() here starts from {root}, a leaf with no graph "
        f"behind it, so it only sets {root}.grad (to the gradient it is given), and the optimizer that holds both "
        f"steps {watched.name} without one.",
        "call backward() on a loss computed from the model's output (the forward that uses these parameters), not "
        "on a parameter; to set a parameter's gradient by hand, assign its .grad.",
        related={"defined": run.record.defined_at(watched), "symptom": run.symptom(watched)},
    )
