"""Gradients a ``zero_grad()`` cleared before any ``step()`` read them: a backward line whose gradients no step ever
read (the step runs before it), and one whose gradients the steps read at some runs only (a ``zero_grad()`` inside a
gradient-accumulation loop keeps the last micro-batch of each step)."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "optimizer"


def unread_findings(run, never: set[tuple[str, int]]) -> list[Finding]:
    """Both kinds, but for the optimizers whose steps found every gradient erased (a ``zero_grad()`` between backward
    and step: told as erased gradients, at that ``zero_grad()``)."""
    erased = {event.extra.get("optimizer") for event in run.record.events(KIND) if event.detail in ("erased", "swapped")}
    return _unread(run, never, erased) + _accumulation_undone(run, erased)


def _unread(run, never: set[tuple[str, int]], erased: set[str]) -> list[Finding]:
    """Backwards whose gradients no step read: the optimizer stepped before them and cleared them after (not
    those of an optimizer that never stepped, at the lines in ``never``: its missing step is the finding)."""
    found = []
    for entry in run.record.gradient_use.never_read():
        if entry.optimizer in erased or (entry.site is not None and (entry.site.file, entry.site.line) in never):
            continue
        found.append(run.finding(
            KIND, "warning", entry.optimizer, entry.step_site or entry.site,
            f"{entry.optimizer}.step() here runs before the backward at {entry.site}, and the next zero_grad() (at "
            f"{entry.cleared_at}) clears the gradients that backward gave, so no step ever reads them: that loss "
            "changes no weight.",
            f"call {entry.optimizer}.step() after every backward() whose gradients it should use (move it below the "
            f"backward at {entry.site}).",
            entry.count, related={"symptom": entry.site},
        ))
    return found


def _accumulation_undone(run, erased: set[str]) -> list[Finding]:
    """Backward lines whose gradients a step read at some runs while a ``zero_grad()`` cleared them unread at as many
    others or more: the gradients were meant to add up over micro-batches, and each step sees only the last one."""
    found = []
    stepping = {record.name for record in run.record.optimizers if record.step_order >= 0}
    for entry, read in run.record.gradient_use.partly_read():
        if entry.optimizer in erased or entry.optimizer not in stepping:  # never stepped: that is the finding
            continue
        runs = entry.count + read
        found.append(run.finding(
            KIND, "error", entry.optimizer, entry.cleared_at,
            f"this zero_grad() clears the gradients of the backward at {entry.site} before {entry.optimizer}.step() "
            f"(at {entry.step_site}) reads them, at {entry.count} of that backward's {runs} runs: each step sees only "
            "the last backward before it, and the gradients of the others are lost instead of accumulated.",
            "clear the gradients only right after the step (call zero_grad() below step(), under the same condition), "
            "so that the backwards between two steps add up; clear them through the optimizer that steps them.",
            entry.count, related={"used": entry.site},
        ))
    return found
