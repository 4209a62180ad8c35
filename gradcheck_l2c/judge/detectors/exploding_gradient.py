"""`exploding_gradient` (``--grad-stats``): layers whose gradient was not finite or far larger than their weights
(recurrent networks without clipping, too large learning rates or initialisations)."""
from __future__ import annotations

from gradcheck_l2c.judge.grad_stats import EXPLODING, by_line, exploding, judged_series, names
from gradcheck_l2c.records import Finding

KIND = "exploding_gradient"


def scan(run) -> list[Finding]:
    record = run.record
    flagged = [(w, s) for w, s in judged_series(record) if exploding(s)]
    found = []
    for group in by_line(record, flagged):
        watched, series = group[0]
        worst = max(range(len(series.grad_norms)),
                    key=lambda i: series.grad_norms[i] / (series.weight_norms[i] or 1.0))
        found.append(run.finding(
            KIND, "warning", names(group), record.defined_at(watched),
            f"the gradient of {names(group)} exploded: {watched.name}'s reached |grad| "
            f"{series.grad_norms[worst]:.3g} at backward {series.backwards[worst]}, more than {EXPLODING:g} times "
            f"its weight's norm ({series.weight_norms[worst]:.3g}); one step throws the weights far away.",
            "clip the gradients before the step (torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)), lower "
            "the learning rate, or initialise recurrent weights orthogonally.",
        ))
    return found
