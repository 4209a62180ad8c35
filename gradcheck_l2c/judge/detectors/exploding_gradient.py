"""`exploding_gradient` (``--grad-stats``): layers whose gradient was not finite or far larger than their weights
(recurrent networks without clipping, too large learning rates or initialisations)."""
from __future__ import annotations

import math

from gradcheck_l2c.judge.grad_stats import EXPLODING, by_line, exploding, judged_series, names
from gradcheck_l2c.records import Finding

KIND = "exploding_gradient"


def scan(run) -> list[Finding]:
    record = run.record
    flagged = [(w, s) for w, s in judged_series(record) if exploding(s)]
    found = []
    for group in by_line(record, flagged):
        watched, series = group[0]
        norms = series.grad_norms
        at = next((i for i, g in enumerate(norms) if not math.isfinite(g)), len(norms) - 1)
        found.append(run.finding(
            KIND, "warning", names(group), record.defined_at(watched),
            f"the gradient of {names(group)} exploded: {watched.name}'s went from |grad| {norms[0]:.3g} at backward "
            f"{series.backwards[0]} to {norms[at]:.3g} at backward {series.backwards[at]} (its weight's norm "
            f"{series.weight_norms[at]:.3g}; more than {EXPLODING:g} times, or not finite): one step throws the "
            "weights far away.",
            "clip the gradients before the step (torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)), lower "
            "the learning rate, or initialise recurrent weights orthogonally.",
        ))
    return found
