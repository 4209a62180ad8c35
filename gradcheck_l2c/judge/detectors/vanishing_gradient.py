"""`vanishing_gradient` (``--grad-stats``): layers whose gradient stayed negligible beside their weights while the
loss had not converged: they have stopped learning (deep sigmoid/tanh stacks, saturated units)."""
from __future__ import annotations

from gradcheck_l2c.judge.grad_stats import VANISHING, by_line, judged_series, names, vanishing
from gradcheck_l2c.records import Finding

KIND = "vanishing_gradient"


def scan(run) -> list[Finding]:
    record = run.record
    losses = record.losses
    flagged = [(w, s) for w, s in judged_series(record) if vanishing(s, losses)]
    found = []
    for group in by_line(record, flagged):
        watched, series = group[0]
        found.append(run.finding(
            KIND, "warning", names(group), record.defined_at(watched),
            f"the gradient of {names(group)} stayed below {VANISHING:g} of the weight's norm at each of the last "
            f"backwards ({len(series.grad_norms)} recorded; |grad| of {watched.name} at the last: "
            f"{series.grad_norms[-1]:.3g}) while the loss had not converged: these layers have stopped learning.",
            "use ReLU/GELU rather than sigmoid/tanh between many layers, add normalisation or residual "
            "connections, or initialise the weights for the activation (nn.init.kaiming_normal_).",
        ))
    return found
