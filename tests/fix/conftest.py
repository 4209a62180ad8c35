"""Helpers for the fix tests: a script on disk and the findings that point into it, planned and applied."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("libcst")

from gradcheck_l2c.fix.applier import patched  # noqa: E402
from gradcheck_l2c.fix.planner import plan_fixes  # noqa: E402
from gradcheck_l2c.records import Finding  # noqa: E402


class Source:
    """A file written from ``code``; ``fix(kind, line, tensor)`` plans that finding's fix and returns the new text
    (or the reason it stays in words)."""

    def __init__(self, path: Path, code: str) -> None:
        self.path = path
        path.write_text(textwrap.dedent(code))

    def finding(self, kind: str, line: int, tensor: str = "w", column: int | None = None) -> Finding:
        code = self.path.read_text().splitlines()[line - 1]
        return Finding(kind, "error", tensor, str(self.path), line, code, "", "", column=column)

    def fix(self, kind: str, line: int, tensor: str = "w", *others: Finding) -> str:
        finding = self.finding(kind, line, tensor)
        plan = plan_fixes([finding, *others])
        edit = plan.edit_for(finding)
        if edit is None:
            return "words: " + plan.reasons[finding.key()]
        return patched([edit])[str(self.path)][1]


@pytest.fixture
def source(tmp_path):
    def make(code: str) -> Source:
        return Source(tmp_path / "train.py", code)

    return make
