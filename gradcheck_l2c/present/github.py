"""``--output-format github``: GitHub Actions workflow commands (``::error file=...,line=...::message``),
so each finding shows as an annotation on the pull request's line without uploading anything.

Values are escaped as GitHub's runner reads them: ``%``, CR and LF in the message; also ``:`` and ``,``
in the properties (file, title).
"""
from __future__ import annotations

from collections.abc import Sequence

from gradcheck_l2c.present.textreport import display_path, listed, summary_line
from gradcheck_l2c.records import Finding, WatchedTensor
from gradcheck_l2c.rules import code_of

_COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def format_github(findings: Sequence[Finding], watched: Sequence[WatchedTensor], *, verbose: bool = False) -> str:
    """One workflow command per finding that is not suppressed (notes only when ``verbose``), then the
    summary line as plain log text."""
    lines = [annotation(finding) for finding in listed(findings, verbose)]
    lines.append(summary_line(findings, watched))
    return "\n".join(lines) + "\n"


def annotation(finding: Finding) -> str:
    """``::error file=F,line=L,col=C,title=GC001 item::tensor: message`` and the fix on a second line."""
    properties = [f"file={escape_property(display_path(finding.file))}", f"line={finding.line}"]
    if finding.column:
        properties.append(f"col={finding.column}")
    properties.append(f"title={escape_property(f'{code_of(finding.kind)} {finding.kind}')}")
    text = f"{finding.tensor}: {finding.message}" if finding.tensor else finding.message
    if finding.fix:
        text += f"\nfix: {finding.fix}"
    return f"::{_COMMANDS.get(finding.severity, 'warning')} {','.join(properties)}::{escape_data(text)}"


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF percent-encoded."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as the message, plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
