"""Which findings get a source change: each kind with a mechanical fix maps to one transformation, run on the
finding's file at its line. Findings of one kind on one line (the same cut of several tensors) share one
:class:`Edit`; a finding without one keeps its reason, and its fix stays in words."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gradcheck_l2c.fix import cuts, leaves, numbers, optimizers, registration, snapshots
from gradcheck_l2c.fix.source import SourceFile
from gradcheck_l2c.fix.transform import Change, Unfixable
from gradcheck_l2c.records import Finding

Transformation = Callable[[SourceFile, list[Finding]], Change]

#: The kinds whose fix is mechanical, and the transformation that writes it.
TRANSFORMATIONS: dict[str, Transformation] = {
    "item": numbers.keep_tensor,
    "tensor_rewrap": numbers.stack_or_itself,
    "detach": cuts.drop_detach,
    "data_attr": cuts.drop_data,
    "non_parameter_tensor": registration.register,
    "optimizer": optimizers.include_missing,
    "state_dict_alias": snapshots.clone_snapshot,
    "state_dict_reload": snapshots.functional_call,
    "non_leaf_watched": leaves.make_leaf,
}


@dataclass
class Edit:
    """One mechanical fix: the findings it answers (one kind, one line), the file, what it does in words, and
    the node rewrites of that file's parse."""

    findings: list[Finding]
    source: SourceFile
    change: Change

    @property
    def file(self) -> str:
        return self.source.path

    @property
    def line(self) -> int:
        return self.findings[0].line

    @property
    def kind(self) -> str:
        return self.findings[0].kind


@dataclass
class FixPlan:
    """The edits planned for a run's findings, in the findings' order, and why the others have none;
    ``revealed``: findings only a rerun of the patched copy gave (a cut behind a fixed one), planned too."""

    edits: list[Edit] = field(default_factory=list)
    reasons: dict[tuple[str, str, str, int], str] = field(default_factory=dict)
    revealed: list[Finding] = field(default_factory=list)
    sources: dict[str, SourceFile] = field(default_factory=dict)

    def edit_for(self, finding: Finding) -> Edit | None:
        """The edit that answers ``finding`` (the one of its kind at its line)."""
        return next((edit for edit in self.edits if (edit.kind, edit.file, edit.line) == (
            finding.kind, finding.file, finding.line)), None)


def plan_fixes(findings: Iterable[Finding], plan: FixPlan | None = None) -> FixPlan:
    """Plan a source change for every finding whose kind has a transformation and whose line it can read
    (added to ``plan`` when given: its files' parses are shared, so all edits of a file apply together)."""
    plan = plan if plan is not None else FixPlan()
    groups: dict[tuple[str, str, int], list[Finding]] = {}
    for finding in findings:
        if finding.suppressed:
            continue
        if finding.kind not in TRANSFORMATIONS:
            plan.reasons[finding.key()] = "no mechanical fix for this kind"
        elif not os.path.isfile(finding.file) or finding.line <= 0:
            plan.reasons[finding.key()] = "the line is not in a file that can be read"
        else:
            groups.setdefault((finding.kind, finding.file, finding.line), []).append(finding)
    sources = plan.sources
    for (kind, file, _), group in groups.items():
        try:
            if file not in sources:
                sources[file] = SourceFile.read(file)
            plan.edits.append(Edit(group, sources[file], TRANSFORMATIONS[kind](sources[file], group)))
        except Unfixable as reason:
            plan.reasons.update({finding.key(): str(reason) for finding in group})
        except (OSError, UnicodeDecodeError, SyntaxError) as error:
            plan.reasons.update({finding.key(): f"the file cannot be parsed: {error}" for finding in group})
    return plan
