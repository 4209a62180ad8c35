"""`optimizer`: a watched parameter sits in two optimizers, or gets gradients but is in none."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "optimizer"


def scan(run) -> list[Finding]:
    optimizers = [(ref(), site) for ref, site in run.state.optimizers]
    optimizers = [(opt, site) for opt, site in optimizers if opt is not None]
    if not optimizers:
        return []
    members: dict[int, list] = {}
    for opt, site in optimizers:
        for group in opt.param_groups:
            for param in group["params"]:
                members.setdefault(id(param), []).append((opt, site))
    found = []
    for watched in run.watched():
        tensor = watched.tensor
        if tensor is None or not watched.is_parameter:
            continue
        holders = members.get(id(tensor), [])
        if len(holders) >= 2:
            kinds = " and ".join(type(opt).__name__ for opt, _ in holders)
            found.append(run.finding(
                KIND, "warning", watched.name, holders[1][1],
                f"{watched.name} is in {len(holders)} optimizers ({kinds}): each step updates it twice, "
                "with different rules.",
                f"give each optimizer its own parameters, e.g. "
                f"[p for n, p in model.named_parameters() if n != '{watched.name.split('.', 1)[-1]}'].",
            ))
        elif not holders and watched.ever_grad and tensor.requires_grad:
            found.append(run.finding(
                KIND, "warning", watched.name, watched.site or optimizers[0][1],
                f"{watched.name} gets gradients but is in no optimizer, so it never changes.",
                f"add it to an optimizer (built after the parameter exists), or freeze it with requires_grad_(False).",
            ))
    return found
