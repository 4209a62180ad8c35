"""`--grad-stats`: which parameters' gradients vanish, explode or leave units dead, from the recorded norms.

The thresholds are rules of thumb (the ratio of a gradient's norm to its weight's norm is the relative step
SGD would take at learning rate 1): below ``VANISHING`` for the last ``WINDOW`` backwards while the loss has
not converged, a layer has stopped learning; not finite, or grown ``EXPLODING`` times to end above
``EXPLODING`` times the weight, the gradient explodes; more than half the rows of a weight without gradient
over ``DEAD_BACKWARDS`` backwards are dead units. Only weights with two or more dimensions are judged: biases and norm scales start
at 0 or 1 and say little about a layer's gradient.
"""
from __future__ import annotations

import math

from gradcheck_l2c.record.facts import GradSeries, Watched
from gradcheck_l2c.record.query import TraceRecord
from gradcheck_l2c.records import LayerGradients

VANISHING = 1e-7  # |grad| / |weight| below this ...
WINDOW = 3  # ... for this many last backwards at least
EXPLODING = 1e3  # |grad| / |weight| above this at the last backward, after growing this many times over the run
DEAD_BACKWARDS = 10  # dead units: rows without gradient at every one of at least this many backwards ...
DEAD_SHARE = 0.5  # ... more than this share of the rows, not all
CONVERGED = 1e-3  # the loss fell below this fraction of its first value: a small gradient is expected
#: Modules whose weight rows are looked up, not computed: a row without gradient is an unused token.
LOOKUP_TABLES = ("Embedding", "EmbeddingBag")


def _ratios(series: GradSeries) -> list[float]:
    return [g / w if w > 0 else math.inf for g, w in zip(series.grad_norms, series.weight_norms)]


def _judged(watched: Watched) -> bool:
    return len(watched.shape) >= 2 and watched.holder not in LOOKUP_TABLES


def vanishing(series: GradSeries, losses: list[float]) -> bool:
    """The gradient stayed below ``VANISHING`` of the weight for the last ``WINDOW`` backwards (or more),
    and the loss did not converge."""
    ratios = _ratios(series)
    if len(ratios) < WINDOW or not all(r < VANISHING for r in ratios[-WINDOW:]):
        return False
    return not (losses and losses[0] > 0 and losses[-1] < CONVERGED * losses[0])


def exploding(series: GradSeries) -> bool:
    """The gradient was not finite at some backward, or grew ``EXPLODING`` times over the run to end above
    ``EXPLODING`` times its weight (a large ratio alone is how some losses are scaled, for Adam to undo)."""
    norms = series.grad_norms
    if any(not math.isfinite(g) for g in norms):
        return True
    start = next((g for g in norms if g > 0), 0.0)
    return start > 0 and norms[-1] > EXPLODING * start and _ratios(series)[-1] > EXPLODING


def dead_units(series: GradSeries) -> bool:
    """More than ``DEAD_SHARE`` of the rows, not all, never got a non-zero gradient in ``DEAD_BACKWARDS`` or more
    backwards (the "dying ReLU"; a few units idle over a short run are common)."""
    return len(series.grad_norms) >= DEAD_BACKWARDS and DEAD_SHARE * series.units < series.dead < series.units


def judged_series(record: TraceRecord) -> list[tuple[Watched, GradSeries]]:
    """The series of weights (two or more dimensions, no lookup tables), with their watched entries."""
    pairs = [(record.watched_at(s.key), s) for s in record.grad_series]
    return [(w, s) for w, s in pairs if _judged(w)]


def layer_gradients(record: TraceRecord) -> list[LayerGradients]:
    """Every recorded parameter's series, for the JSON report and the plot, with what was found about it."""
    losses = record.losses
    found = []
    for series in record.grad_series:
        watched = record.watched_at(series.key)
        flags = ()
        if _judged(watched):
            flags = tuple(kind for kind, test in (("vanishing_gradient", vanishing(series, losses)),
                                                  ("exploding_gradient", exploding(series)),
                                                  ("dead_units", dead_units(series))) if test)
        found.append(LayerGradients(watched.name, tuple(watched.shape), tuple(series.backwards),
                                    tuple(series.grad_norms), tuple(series.weight_norms), series.units,
                                    series.dead, flags, tuple(series.steps), tuple(series.update_ratios)))
    return found


def by_line(record: TraceRecord, flagged: list[tuple[Watched, GradSeries]]) -> list[list[tuple[Watched, GradSeries]]]:
    """Flagged weights grouped by the line that defined them (the layers a loop builds share one finding)."""
    groups: dict[object, list[tuple[Watched, GradSeries]]] = {}
    for pair in flagged:
        groups.setdefault(record.defined_at(pair[0]), []).append(pair)
    return list(groups.values())


def names(group: list[tuple[Watched, GradSeries]]) -> str:
    """``a.weight`` / ``a.weight and b.weight`` / ``a.weight, b.weight ... (26 weights)``."""
    found = [watched.name for watched, _ in group]
    if len(found) <= 2:
        return " and ".join(found)
    return f"{found[0]} ... {found[-1]} ({len(found)} weights)"
