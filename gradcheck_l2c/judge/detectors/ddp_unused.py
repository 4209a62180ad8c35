"""`ddp_unused`: DistributedDataParallel waited for a gradient that never came.

DDP's error ("Expected to have finished reduction in the prior iteration ...") names parameter
indices; ``find_unused_parameters=True`` hides the same problem at a cost each iteration. Each such
parameter is named here by module path and defining line, with why it got no gradient: its module
was never called by the forward, its output was cut on the way to the loss, its output was not used,
or it was frozen after DDP registered it.
"""
from __future__ import annotations

import os
from typing import Any

from gradcheck_l2c.record.facts import DdpError, DdpModule, DdpRecord, Site
from gradcheck_l2c.records import Finding

KIND = "ddp_unused"
_LAST_RESORT = ("find_unused_parameters=True in DDP(...) is the last resort: it walks the autograd graph "
                "after every forward to find such parameters, which costs time each iteration")


def scan(run: Any) -> list[Finding]:
    found: list[Finding] = []
    for record in run.record.ddp:
        for error in record.errors:
            found.extend(_finding(run, record, key, error) for key in _unused(run, record, error))
        if record.find_unused and not record.errors and run.record.backwards:
            found.extend(_finding(run, record, key, None) for key in record.keys
                         if key is not None and key in run.keys and not run.record.watched_at(key).ever_grad)
    return found


def note(findings: list[Finding]) -> str | None:
    """The lines added to DDP's own error: each parameter it waited for, where it is defined, and why."""
    told = [f for f in findings if f.kind == KIND and f.severity == "error"]
    if not told:
        return None
    lines = ["gradcheck-l2c: the parameters DDP waited for:"]
    lines += [f"  {f.tensor} ({os.path.basename(f.file)}:{f.line}): {f.message.split(': ', 1)[-1]}" for f in told]
    return "\n".join(lines)


def _unused(run: Any, record: DdpRecord, error: DdpError) -> list[int]:
    """The watched keys the error is about: by DDP's index, by name, or (neither printed) those the
    last backward did not reach."""
    if error.indices:
        keys = [record.keys[i] for i in error.indices if i < len(record.keys)]
    elif error.names:
        keys = [record.names.get(name) for name in error.names]
    else:
        last = run.record.backwards
        keys = [k for k in record.keys if k is not None and run.record.watched_at(k).last_reached < last]
    return [k for k in keys if k is not None and k in run.keys]


def _finding(run: Any, record: DdpRecord, key: int, error: DdpError | None) -> Finding:
    watched = run.record.watched_at(key)
    name = watched.name
    module = record.modules.get(record.owners.get(key, ""))
    why, action, used = _reason(run, record, key, module, error)
    if error is None:
        message = (f"DDP's find_unused_parameters=True found {name} unused in every iteration: {why}. It never "
                   "learns, and finding it costs a walk of the autograd graph after every forward.")
        fix = f"{action}; if it is meant to stay fixed, call requires_grad_(False) on it before DDP(...)."
        return run.finding(KIND, "warning", name, watched.site, message, fix,
                           related={"defined": record.site, "used": used})
    index = record.keys.index(key) if key in record.keys else None
    which = f" (index {index})" if index is not None else ""
    if error.static_graph:
        message = (f"DDP with static_graph=True expected the same parameters to get gradients in every "
                   f"iteration, but {name}{which} got none in iteration {error.iteration}: {why}.")
        fix = f"{action}; static_graph=True needs the same parameters used in every iteration, or leave it out."
    else:
        message = (f"DDP waited for a gradient of {name}{which} that never came in iteration "
                   f"{error.iteration}: {why}.")
        fix = (f"{action}; if it is meant to stay fixed, call requires_grad_(False) on it before DDP(...); "
               f"{_LAST_RESORT}.")
    return run.finding(KIND, "error", name, watched.site, message, fix,
                       related={"symptom": error.site, "used": used})


def _reason(run: Any, record: DdpRecord, key: int, module: DdpModule | None,
            error: DdpError | None) -> tuple[str, str, Site | None]:
    """Why the parameter got no gradient, what to do first, and the line where its values were last used."""
    name = run.record.watched_at(key).name
    if error is not None and key in error.frozen:
        return ("it was frozen (requires_grad=False) after DDP(...) registered it",
                "freeze it before wrapping the model in DDP(...), so that DDP leaves it out, or build DDP(...) "
                "again after freezing", record.site)
    first, end = run.record.ddp_window(record, error.iteration if error else None)
    cuts = [e for e in run.uses(run.record.watched_at(key)) if first <= e.order < end]
    if cuts:
        last = max(cuts, key=lambda e: e.order)
        fix = run.cut_finding(last, name).fix.rstrip(".")
        return f"its values were cut from the loss at {last.site} ({last.detail})", f"at {last.site}: {fix}", last.site
    if module is None:
        return "no module of the model holds it", "use it in forward, or delete it", None
    call = run.record.ddp_called(record, module.path, error.iteration if error is not None else None)
    if call is False:
        parent = record.modules.get(module.parent or "")
        where = f"{parent.cls}.forward ({parent.forward})" if parent is not None else "the forward"
        return (f"{module.path} was never called: {where} skips it",
                f"call {module.path} in forward so that its output reaches the loss, or delete it", None)
    if any(run.record.watched_at(k).ever_grad for k in module.keys):
        return (f"{module.cls}.forward ran but does not use it", f"use it in {module.cls}.forward, or delete it",
                call)
    return (f"{module.path} was called at {call}, but its output did not reach the loss",
            "use its output in the loss, or stop computing it", call)
