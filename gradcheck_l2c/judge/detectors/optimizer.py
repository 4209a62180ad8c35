"""`optimizer`: a watched parameter sits in two live optimizers at once, or gets gradients but is in
none; or a ``step()`` finds every gradient erased since the last backward.

Both are noticed while the tensors live: at an optimizer's construction, and at a parameter's first
gradient.
"""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "optimizer"


def scan(run) -> list[Finding]:
    state = run.state
    found = []
    for event in state.events.of_kind(KIND):
        if event.detail == "erased":
            optimizer = event.extra["optimizer"]
            found.append(run.finding(
                KIND, "error", f"{optimizer} ({event.extra['size']} parameters)", event.site,
                f"{optimizer}.step() found no gradient on any of its parameters although backward() ran since "
                "the previous step: they were erased in between, so this step changes nothing.",
                "call optimizer.zero_grad() before loss.backward() (or right after step()), never between "
                "backward() and step().",
                event.count,
            ))
            continue
        if event.key not in run.keys:
            continue
        name = run.name(event.key)
        if event.detail == "none":
            tensor = state.registry.all[event.key].tensor
            if tensor is not None and any(record.holds(tensor) for record in state.optimizers):
                continue  # an optimizer built later took it
            found.append(run.finding(
                KIND, "warning", name, event.site,
                f"{name} gets gradients but is in no optimizer, so it never changes (a parameter made after "
                "the optimizer, or left out of its list).",
                "build the optimizer after the model is complete, or add it with "
                "optimizer.add_param_group({'params': [param]}); freeze it with requires_grad_(False) "
                "if it should not learn.",
                event.count,
            ))
            continue
        attr = name.split(".", 1)[-1]
        found.append(run.finding(
            KIND, "warning", name, event.site,
            f"{name} is in two optimizers ({event.extra['first']} and {event.detail}): each step updates it "
            "with both rules.",
            f"give each optimizer its own parameters, e.g. "
            f"[p for n, p in model.named_parameters() if n != '{attr}'] for the {event.extra['first']}.",
            event.count,
        ))
    return found
