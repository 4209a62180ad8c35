"""``--verify``: run the patched copy under the tracer again and judge each fix by what that run gave.

A fix is **verified** when its finding is gone, the watched tensor it was about now gets a gradient, and the
script ends no worse than before (or, for a cut, ends later than the gradient arrived); **not enough** when the
tensor still gets none (the next cause on the same path is named) or the patched script now fails; **not
checked** when there is no mechanical fix or the run hit its step or time limit before it ended. The edits that
cut one tensor's path are tried together, in the order the values flowed: the first alone, then the first two,
and so on, each finding judged by the smallest set holding its own fix (the seed's ``.item()`` alone is not
enough; with the ``load_state_dict`` fix it is verified)."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gradcheck_l2c.fix.applier import patched
from gradcheck_l2c.fix.planner import Edit, FixPlan, plan_fixes
from gradcheck_l2c.records import Finding, WatchedTensor
from gradcheck_l2c.rules import CAUSES

VERIFIED, NOT_ENOUGH, NOT_CHECKED = "verified", "not enough", "not checked"
#: How many cuts that only reruns reveal are planned, at most, in one verification.
_REVEALED = 4


@dataclass
class Rerun:
    """What one traced run gave, in the original files' lines: findings, watched tensors, the exception that
    stopped it (``error``: type, file and line) and whether the step or time limit stopped it."""

    findings: list[Finding]
    watched: list[WatchedTensor]
    error: tuple[str, str, int] | None = None
    message: str = ""
    limited: bool = False
    checked: bool = True
    note: str = ""


@dataclass(frozen=True)
class Verdict:
    """The verification of one finding's fix: ``status`` (verified, not enough, not checked) and why."""

    status: str
    note: str
    joint: bool = False  # not enough alone, verified with the other fixes on its path


#: Runs the script with ``{file: patched text}`` in place of those files, in a scratch copy.
Runner = Callable[[dict[str, tuple[str, str]]], Rerun]


def verify(plan: FixPlan, findings: Sequence[Finding], original: Rerun, run: Runner) -> dict[tuple, Verdict]:
    """A verdict for every finding (by :meth:`Finding.key`), from reruns of the patched script."""
    verdicts: dict[tuple, Verdict] = {}
    for finding in findings:
        if plan.edit_for(finding) is None and not finding.suppressed:
            verdicts[finding.key()] = Verdict(NOT_CHECKED, plan.reasons.get(finding.key(), "no mechanical fix"))
    groups = _paths(plan.edits)
    kept: list[Edit] = []
    for group in [group for group in groups if not _on_path(group)]:
        rerun = run(patched(group))
        for finding in group[0].findings:
            verdicts[finding.key()] = judge(finding, original, rerun)
        if all(verdicts[finding.key()].status == VERIFIED for finding in group[0].findings):
            kept += group
    for group in [group for group in groups if _on_path(group)]:
        _verify_path(group, kept, original, run, verdicts, plan)
    return verdicts


def _verify_path(group: list[Edit], kept: list[Edit], original: Rerun, run: Runner,
                 verdicts: dict[tuple, Verdict], plan: FixPlan) -> None:
    """The edits on one path, tried as growing prefixes in a copy that keeps the fixes beside the path that
    verified alone (``kept``: the seed's snapshot fix makes the change Δθ that alpha's gradient needs). When all
    of them are not enough and the rerun names a next cut with a mechanical fix, that fix joins the path."""
    beside = f"; kept in the copy: the fix at {', '.join(map(_place, kept))}" if kept else ""
    size = 0
    while size < len(group):
        size += 1
        rerun = run(patched(kept + group[:size]))
        together = [_place(edit) for edit in group[:size - 1]]
        for finding in group[size - 1].findings:
            verdict = judge(finding, original, rerun)
            if together and verdict.status == VERIFIED:
                verdict = Verdict(VERIFIED, f"{verdict.note} (together with the fix at {', '.join(together)})")
            verdicts[finding.key()] = Verdict(verdict.status, verdict.note + beside)
        if size == len(group) and len(plan.revealed) < _REVEALED:
            group += _revealed(plan, group[-1].findings, rerun)
    if len(group) > 1 and all(verdicts[finding.key()].status == VERIFIED for finding in group[-1].findings):
        for edit in group[:-1]:
            for finding in edit.findings:
                verdict = verdicts[finding.key()]
                if verdict.status == NOT_ENOUGH:
                    verdicts[finding.key()] = Verdict(NOT_ENOUGH, f"alone: {verdict.note}; with the fixes at "
                                                      f"{', '.join(map(_place, group))} together: verified", True)


def _revealed(plan: FixPlan, findings: list[Finding], rerun: Rerun) -> list[Edit]:
    """The edit for the next cut a rerun names behind ``findings`` (planned on the original file, at the line the
    rerun's finding maps back to), or none."""
    following = next((other for other in rerun.findings for finding in findings
                      if other.tensor == finding.tensor and other.kind in CAUSES and not other.suppressed
                      and other.key() != finding.key() and plan.edit_for(other) is None), None)
    if following is None or following.key() in plan.reasons:
        return []
    same = [other for other in rerun.findings if (other.kind, other.file, other.line) == (
        following.kind, following.file, following.line)]
    plan_fixes(same, plan)
    edit = plan.edit_for(following)
    if edit is None:
        return []
    plan.revealed += same
    return [edit]


def judge(finding: Finding, original: Rerun, rerun: Rerun) -> Verdict:
    """The verdict on ``finding`` after a rerun with its fix."""
    if not rerun.checked:
        return Verdict(NOT_CHECKED, rerun.note)
    if rerun.limited:
        return Verdict(NOT_CHECKED, f"the patched copy reached its limit ({rerun.note}) before it ended")
    watched = next((tensor for tensor in rerun.watched if tensor.name == finding.tensor), None)
    learns = watched.got_grad is True if watched is not None else _all_learn(finding, rerun)
    still = [other for other in rerun.findings if other.key() == finding.key()]
    new_error = rerun.error is not None and rerun.error != original.error
    if not still and learns and finding.kind in CAUSES:
        later = f"; the patched script then stops with {rerun.message}" if new_error else ""
        return Verdict(VERIFIED, f"{finding.tensor} gets a gradient{later}")
    if new_error:
        return Verdict(NOT_ENOUGH, f"the patched script now stops with {rerun.message}")
    starved = finding.kind in CAUSES and not learns
    if not still and not starved and rerun.error is None:
        return Verdict(VERIFIED, f"{finding.tensor} gets a gradient" if learns else "the finding is gone")
    following = next((other for other in rerun.findings if other.tensor == finding.tensor and other.kind in CAUSES
                      and other.key() != finding.key() and not other.suppressed), None)
    if following is not None:
        return Verdict(NOT_ENOUGH, f"{finding.tensor} still gets no gradient: {os.path.basename(following.file)}:"
                       f"{following.line} ({following.kind}) cuts the same path: {following.code.strip()}")
    if rerun.error is not None:
        return Verdict(NOT_ENOUGH, f"the patched script still stops with {rerun.message}")
    if still:
        return Verdict(NOT_ENOUGH, "the finding is still reported after the change")
    return Verdict(NOT_ENOUGH, f"{finding.tensor} still gets no gradient")


def _all_learn(finding: Finding, rerun: Rerun) -> bool:
    """For a tensor the rerun names otherwise (the fix changed which variable holds it): every watched tensor
    that a backward involved got its gradient, and no cause is left."""
    return (any(tensor.got_grad for tensor in rerun.watched)
            and not any(tensor.got_grad is False for tensor in rerun.watched)
            and not any(other.kind in CAUSES and not other.suppressed for other in rerun.findings))


def _place(edit: Edit) -> str:
    return f"{os.path.basename(edit.file)}:{edit.line}"


def _on_path(group: list[Edit]) -> bool:
    return any(finding.kind in CAUSES for edit in group for finding in edit.findings)


def _paths(edits: list[Edit]) -> list[list[Edit]]:
    """The edits grouped by the path they cut: cause edits that share a tensor go together (in order); every
    other edit stands alone."""
    groups: list[list[Edit]] = []
    tensors: list[set[str]] = []
    for edit in edits:
        names = {finding.tensor for finding in edit.findings if finding.kind in CAUSES}
        joined = [index for index, known in enumerate(tensors) if names & known]
        if not joined:
            groups.append([edit])
            tensors.append(names)
            continue
        first = joined[0]
        for index in reversed(joined[1:]):
            groups[first].extend(groups.pop(index))
            tensors[first] |= tensors.pop(index)
        groups[first].append(edit)
        tensors[first] |= names
    return groups
