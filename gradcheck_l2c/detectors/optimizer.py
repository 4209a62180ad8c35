"""`optimizer`: a watched parameter sits in two optimizers, or gets gradients but is in none."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "optimizer"


def scan(run) -> list[Finding]:
    optimizers = run.state.optimizers
    if not optimizers:
        return []
    found = []
    for watched in run.watched():
        tensor = watched.tensor
        if tensor is None or not watched.is_parameter:
            continue
        holders = [record for record in optimizers if record.holds(tensor)]
        if len(holders) >= 2:
            names = " and ".join(record.name for record in holders)
            attr = watched.name.split(".", 1)[-1]
            found.append(run.finding(
                KIND, "warning", watched.name, holders[1].site,
                f"{watched.name} is in {len(holders)} optimizers ({names}): each step updates it with "
                "both rules.",
                f"give each optimizer its own parameters, e.g. "
                f"[p for n, p in model.named_parameters() if n != '{attr}'] for the first one.",
            ))
        elif not holders and watched.ever_grad and tensor.requires_grad:
            found.append(run.finding(
                KIND, "warning", watched.name, watched.site or optimizers[0].site,
                f"{watched.name} gets gradients but is in no optimizer, so it never changes.",
                "add it to an optimizer (built after the parameter exists), or freeze it with "
                "requires_grad_(False).",
            ))
    return found
