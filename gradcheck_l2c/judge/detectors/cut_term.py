"""`cut_term`: a term of the loss carries no gradient although it is computed from tensors the loss's other
terms train: its values reached the tensors only through a cut, so it adds nothing to their update.

The finding sits on the cut (the line to change), with the line that added the term as its symptom. A term
cut for another optimizer's step (a GAN's discriminator loss on a detached fake) is not dead: it has a
gradient of its own, so it is never reported here.
"""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "cut_term"


def scan(run) -> list[Finding]:
    found = []
    for (added_at, key, chain), count in run.record.dead_terms.items():
        if key not in run.keys:
            continue
        watched = run.record.watched_at(key)
        if not run.optimized_param(watched):
            continue  # no optimizer updates it: a term cut from it changes no update
        name = watched.name
        for event in chain:
            fix = run.cut_finding(event, name).fix
            how = f"`{event.detail}` ran with gradients disabled and" if event.kind == "no_grad" else f"`{event.detail}`"
            found.append(run.finding(
                KIND, "warning", name, event.site,
                f"{how} cut a term of the loss from {name}: the term added at {added_at} carries no gradient, so "
                f"it adds nothing to {name}'s update, although the loss's other terms reach it.",
                fix, count, related={"symptom": added_at},
            ))
    return found
