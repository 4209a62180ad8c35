"""Inline suppressions: ``# gradcheck: ignore[GC001]`` (a code), ``ignore[item]`` (a kind) or a bare
``# gradcheck: ignore`` on the line a finding points at silences it.

Silenced findings stay in the results with ``suppressed=True`` (JSON and SARIF keep them, the summary
counts them, ``--fail-on`` ignores them). A suppression that silenced nothing is itself reported as an
``unused_suppression`` note, as ruff reports an unused ``noqa``, so stale ones do not pile up. Only the
files the run touched (where its findings, cuts, tensors and optimizers were) are read for comments.
"""
from __future__ import annotations

import dataclasses
import io
import linecache
import os
import re
import tokenize
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gradcheck_l2c.record.query import TraceRecord
from gradcheck_l2c.records import Finding
from gradcheck_l2c.rules import lookup, rule_for

_COMMENT = re.compile(r"#\s*gradcheck:\s*ignore\b(?:\[([^\]]*)\])?")
KIND = "unused_suppression"


@dataclass
class Suppression:
    """One ``# gradcheck: ignore`` comment: its place, the text, the names it lists (none: every
    finding on the line), and the names that silenced something."""

    file: str
    line: int
    column: int
    text: str
    names: tuple[str, ...]
    used: set[str] = field(default_factory=set)

    def silences(self, finding: Finding) -> bool:
        """Whether this comment silences ``finding`` (on its line); remembers what matched."""
        if not self.names:
            self.used.add("")
            return True
        matched = [name for name in self.names if (rule := lookup(name)) is not None and rule.kind == finding.kind]
        self.used.update(matched)
        return bool(matched)

    def unused(self) -> list[str]:
        """The names that silenced nothing (``[""]`` for a bare comment that silenced nothing)."""
        if not self.names:
            return [] if self.used else [""]
        return [name for name in self.names if name not in self.used]


def apply_suppressions(findings: Sequence[Finding], files: Iterable[str]) -> list[Finding]:
    """``findings`` with the suppressed ones marked, then one note per suppression that silenced nothing."""
    comments: dict[tuple[str, int], Suppression] = {}
    for file in sorted(set(files)):
        for suppression in suppressions_in(file):
            comments[(suppression.file, suppression.line)] = suppression
    result = []
    for finding in findings:
        comment = comments.get((finding.file, finding.line))
        if comment is not None and finding.kind != KIND and comment.silences(finding):
            finding = dataclasses.replace(finding, suppressed=True)
        result.append(finding)
    for comment in comments.values():
        unused = comment.unused()
        if unused:
            result.append(_unused_note(comment, unused))
    return result


def touched_files(record: TraceRecord, findings: Iterable[Finding]) -> set[str]:
    """The user files the run touched: where its findings, recorded events, watched tensors and
    optimizers were."""
    sites = [event.site for event in record.events()]
    sites += [watched.site for watched in record.watched()]
    sites += [optimizer.site for optimizer in record.optimizers]
    files = {site.file for site in sites if site is not None}
    files.update(finding.file for finding in findings)
    return {file for file in files if os.path.isfile(file)}


def suppressions_in(file: str) -> list[Suppression]:
    """The ``# gradcheck: ignore`` comments of one Python file (real comments, not text in strings)."""
    lines = linecache.getlines(file)
    if not any("gradcheck" in line for line in lines):
        return []
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO("".join(lines)).readline):
            if token.type != tokenize.COMMENT:
                continue
            match = _COMMENT.search(token.string)
            if match is None:
                continue
            names = tuple(name.strip() for name in (match.group(1) or "").split(",") if name.strip())
            column = token.start[1] + match.start() + 1
            found.append(Suppression(file, token.start[0], column, match.group(0), names))
    except (tokenize.TokenError, SyntaxError):  # a file that is not (or no longer) valid Python
        return found
    return found


def _unused_note(comment: Suppression, unused: list[str]) -> Finding:
    rule = rule_for(KIND)
    if unused == [""]:
        what = "silenced no finding during this run"
    else:
        parts = []
        for name in unused:
            known = lookup(name)
            parts.append(f"{name} (no {known.code} {known.kind} finding on this line)" if known
                         else f"{name} (not a gradcheck-l2c code or kind)")
        what = "silenced nothing for " + ", ".join(parts)
    return Finding(KIND, rule.level, "", comment.file, comment.line,  # type: ignore[arg-type]
                   linecache.getline(comment.file, comment.line).strip(),
                   f"`{comment.text}` {what}.", "remove it, or name the code of the finding it should silence "
                   "(gradcheck-l2c rules lists them).", column=comment.column)
