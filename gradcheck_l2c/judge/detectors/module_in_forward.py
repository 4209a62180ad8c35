"""`module_in_forward`: an ``nn.Module`` with parameters built inside another module's forward."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "module_in_forward"


def scan(run) -> list[Finding]:
    found = []
    for event in run.record.events(KIND):
        created, outer = event.detail, event.extra.get("outer", "a module")
        if not run.wants(created, outer):
            continue
        if event.count == 1 and not event.extra.get("built_after") and run.record.backwards >= 2:
            continue  # built once, by a forward run before any optimizer (a lazy head kept on the module): not anew
        found.append(run.finding(
            KIND, "error", f"{created} (in {outer}.forward)", event.site,
            f"{created} is constructed inside {outer}.forward: every call makes new, freshly initialised "
            "weights, which the optimizer never sees and which never learn.",
            f"create it once in {outer}.__init__ (self.layer = {created}(...)) and call it in forward.",
            event.count,
        ))
    return found
