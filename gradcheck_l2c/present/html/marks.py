"""What the HTML report shows where: each finding numbered, its graph, and the marks it puts on source lines.

A finding marks its own line (the cut) and each of its related places (the symptom, where the tensor was
defined or used); every mark knows its finding, so pages can link the two both ways.
"""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from gradcheck_l2c.present.draw.page import Section
from gradcheck_l2c.records import Finding, Related
from gradcheck_l2c.rules import code_of

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class Entry:
    """One listed finding: its number (``f3`` in anchors), rule code, and the graph it is drawn in."""

    number: int
    finding: Finding
    rule: str
    graph: Section | None

    @property
    def anchor(self) -> str:
        return f"f{self.number}"


@dataclass
class LineMarks:
    """The marks on one source line: findings cut here, and places that belong to findings cut elsewhere."""

    cuts: list[Entry] = field(default_factory=list)
    related: list[tuple[Entry, Related]] = field(default_factory=list)

    @property
    def severity(self) -> str:
        """The most severe cut's severity, or ``related`` for a line with only related marks."""
        if not self.cuts:
            return "related"
        return min((entry.finding.severity for entry in self.cuts), key=lambda s: _SEVERITY_ORDER.get(s, 3))


@dataclass
class SourceFile:
    """A file the findings point into: its number (for its page name), path and marked lines."""

    number: int
    path: str
    lines: dict[int, LineMarks] = field(default_factory=dict)

    @property
    def page(self) -> str:
        """The page's file name: numbered, with a slug of the base name that is safe in any file system."""
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(self.path))[:60].strip("._") or "source"
        return f"source-{self.number}-{slug}.html"

    def marks(self, line: int) -> LineMarks:
        return self.lines.setdefault(line, LineMarks())


@dataclass(frozen=True)
class Marked:
    """The findings in report order, and the source files they mark, by path."""

    entries: list[Entry]
    files: dict[str, SourceFile]


def mark(findings: Sequence[Finding], sections: Sequence[Section] = ()) -> Marked:
    """Number the findings that are not suppressed (errors first, then by place) and mark their lines."""
    shown = sorted((f for f in findings if not f.suppressed),
                   key=lambda f: (_SEVERITY_ORDER.get(f.severity, 3), f.file, f.line, f.kind, f.tensor))
    graph_of: dict[tuple, Section] = {}  # by key: a finding given its fix's diff is still the one drawn
    for section in sections:
        for finding in section.findings:
            graph_of.setdefault(finding.key(), section)
    entries = [Entry(number, finding, code_of(finding.kind), graph_of.get(finding.key()))
               for number, finding in enumerate(shown, 1)]
    files: dict[str, SourceFile] = {}

    def source(path: str) -> SourceFile:
        if path not in files:
            files[path] = SourceFile(len(files) + 1, path)
        return files[path]

    for entry in entries:
        if entry.finding.file and entry.finding.line > 0:
            source(entry.finding.file).marks(entry.finding.line).cuts.append(entry)
        for place in entry.finding.related:
            if place.file and place.line > 0:
                source(place.file).marks(place.line).related.append((entry, place))
    return Marked(entries, files)
