"""`state_dict_alias`: a ``state_dict()`` snapshot shares storage with live parameters and is used
after they changed — the "old" weights are the current ones.

The finding sits on the snapshot (the line to change); the first read that saw changed weights is
its symptom.
"""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "state_dict_alias"


def scan(run) -> list[Finding]:
    by_snapshot: dict = {}
    for event in run.record.events(KIND):
        if event.key not in run.keys:
            continue
        by_snapshot.setdefault(event.extra.get("snapshot") or event.site, []).append(event)
    found = []
    for taken, events in by_snapshot.items():
        events.sort(key=lambda e: e.order)
        first = events[0]
        names = list(dict.fromkeys(run.name(e.key) for e in events))
        others = f" and {len(names) - 1} more entries" if len(names) > 1 else ""
        reads = list(dict.fromkeys(e.site for e in events))
        more = f" (and {len(reads) - 1} other line{'s' if len(reads) > 2 else ''})" if len(reads) > 1 else ""
        model = names[0].split(".", 1)[0] if len(names) > 1 else names[0]
        found.append(run.finding(
            KIND, "warning", f"{model}.state_dict()" if len(names) > 1 else names[0], taken,
            f"this state_dict() snapshot shares storage with the live weights ({names[0]}{others}), which "
            f"changed in place afterwards: the read at {first.site}{more} got the current weights, not the "
            "saved ones.",
            "take real copies: {k: v.detach().clone() for k, v in model.state_dict().items()} "
            "(a dict .copy() is shallow; copy.deepcopy(model.state_dict()) also works).",
            max(e.count for e in events), related={"symptom": first.site},
        ))
    return found
