"""`state_dict_alias`: a ``state_dict()`` snapshot shares storage with live parameters and is used
after they changed — the "old" weights are the current ones."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "state_dict_alias"


def scan(run) -> list[Finding]:
    by_site: dict = {}
    for event in run.state.events.of_kind(KIND):
        if event.key not in run.keys:
            continue
        by_site.setdefault(event.site, []).append(event)
    found = []
    for site, events in by_site.items():
        events.sort(key=lambda e: e.order)
        first = events[0]
        names = [run.name(e.key) for e in events]
        others = f" and {len(names) - 1} more entries" if len(names) > 1 else ""
        taken = first.extra.get("snapshot")
        where = f"at {taken} " if taken is not None else ""
        model = names[0].split(".", 1)[0] if len(names) > 1 else names[0]
        found.append(run.finding(
            KIND, "warning", f"{model}.state_dict()" if len(names) > 1 else names[0], site,
            f"the state_dict() snapshot taken {where}shares storage with the live weights ({names[0]}{others}), "
            "which changed in place since: this line reads the current weights, not the saved ones.",
            "take real copies: {k: v.detach().clone() for k, v in model.state_dict().items()} "
            "(a dict .copy() is shallow; copy.deepcopy(model.state_dict()) also works).",
            max(e.count for e in events),
        ))
    return found
