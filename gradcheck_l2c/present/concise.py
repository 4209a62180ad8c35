"""``--output-format concise``: one line per finding, ``path:line:col: GC001 [error] tensor: message``,
as ruff and mypy print, so editors' problem matchers and grep find them; the summary line last."""
from __future__ import annotations

from collections.abc import Sequence

from gradcheck_l2c.present.textreport import display_path, listed, summary_line
from gradcheck_l2c.records import Finding, WatchedTensor
from gradcheck_l2c.rules import code_of


def format_concise(findings: Sequence[Finding], watched: Sequence[WatchedTensor], *, verbose: bool = False) -> str:
    """Every finding that is not suppressed (notes only when ``verbose``), by place; paths relative to the
    current folder when they lie below it."""
    lines = [concise_line(finding) for finding in listed(findings, verbose)]
    lines.append(summary_line(findings, watched))
    return "\n".join(lines) + "\n"


def concise_line(finding: Finding) -> str:
    """``path:line:col: CODE [severity] tensor: message`` (no ``:col`` when the column is unknown)."""
    place = f"{display_path(finding.file)}:{finding.line}" + (f":{finding.column}" if finding.column else "")
    about = f"{finding.tensor}: " if finding.tensor else ""
    return f"{place}: {code_of(finding.kind)} [{finding.severity}] {about}{finding.message}"
