"""`dead_units` (``--grad-stats``): rows of a layer's weight that no backward of the run gave a non-zero gradient,
beside rows that learn: the units they compute are dead (a ReLU whose input is always negative)."""
from __future__ import annotations

from gradcheck_l2c.judge.grad_stats import by_line, dead_units, judged_series, names
from gradcheck_l2c.records import Finding

KIND = "dead_units"


def scan(run) -> list[Finding]:
    record = run.record
    flagged = [(w, s) for w, s in judged_series(record) if dead_units(s)]
    found = []
    for group in by_line(record, flagged):
        watched, series = group[0]
        dead = ", ".join(f"{s.dead} of {s.units}" for _, s in group[:3]) + (" ..." if len(group) > 3 else "")
        found.append(run.finding(
            KIND, "warning", names(group), record.defined_at(watched),
            f"units of {names(group)} ({dead}) got exactly zero gradient at every one of "
            f"{len(series.grad_norms)} backwards: more than half the layer is dead (a ReLU after it never passes "
            "anything for them).",
            "lower the learning rate, use LeakyReLU/GELU, or initialise so that the units start active (a small "
            "positive bias).",
        ))
    return found
