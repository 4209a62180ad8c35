"""`optimizer`: a watched parameter sits in two live optimizers at once, or gets gradients but is in none."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "optimizer"


def scan(run) -> list[Finding]:
    state = run.state
    found = []
    for event in state.events.of_kind(KIND):
        if event.key not in run.keys:
            continue
        name = run.name(event.key)
        attr = name.split(".", 1)[-1]
        found.append(run.finding(
            KIND, "warning", name, event.site,
            f"{name} is in two optimizers ({event.extra['first']} and {event.detail}): each step updates it "
            "with both rules.",
            f"give each optimizer its own parameters, e.g. "
            f"[p for n, p in model.named_parameters() if n != '{attr}'] for the {event.extra['first']}.",
            event.count,
        ))
    if not state.optimizers:
        return found
    for watched in run.watched():
        tensor = watched.tensor
        if tensor is None or not watched.is_parameter or not watched.ever_grad or not tensor.requires_grad:
            continue
        if not any(record.holds(tensor) for record in state.optimizers):
            found.append(run.finding(
                KIND, "warning", watched.name, watched.site or state.optimizers[0].site,
                f"{watched.name} gets gradients but is in no optimizer, so it never changes.",
                "add it to an optimizer (built after the parameter exists), or freeze it with "
                "requires_grad_(False).",
            ))
    return found
