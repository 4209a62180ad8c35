"""``--gitlab-codequality FILE``: GitLab's code quality report (the subset of Code Climate's issue format
that GitLab reads), so findings show in the merge request's code quality widget and diff.

One issue per finding that is not suppressed; paths relative to the repository root. GitLab shows only
the first issue of each fingerprint, so the fingerprint adds the path and an occurrence number to the
finding's own (kind, tensor, code line).
"""
from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from typing import Any

from gradcheck_l2c.present.jsonreport import write_json
from gradcheck_l2c.present.repository import fingerprint, relative_path
from gradcheck_l2c.records import Finding
from gradcheck_l2c.rules import code_of

_SEVERITIES = {"error": "major", "warning": "minor", "info": "info"}


def codequality_document(findings: Iterable[Finding], *, root: str | None) -> list[dict[str, Any]]:
    """The code quality issues; ``root`` is the repository root that paths are relative to."""
    issues = []
    seen: dict[str, int] = {}
    for finding in findings:
        if finding.suppressed or finding.file.startswith("<"):
            continue
        path = relative_path(finding.file, root) or os.path.abspath(finding.file)
        identity = f"{path}\0{fingerprint(finding)}"
        occurrence = seen[identity] = seen.get(identity, -1) + 1
        about = f"{finding.tensor}: " if finding.tensor else ""
        issues.append({
            "description": f"{about}{finding.message}" + (f" Fix: {finding.fix}" if finding.fix else ""),
            "check_name": code_of(finding.kind),
            "fingerprint": hashlib.sha256(f"{identity}\0{occurrence}".encode()).hexdigest()[:32],
            "severity": _SEVERITIES.get(finding.severity, "minor"),
            "location": {"path": path, "lines": {"begin": max(finding.line, 1)}},
        })
    return issues


def write_codequality(path: str, document: list[dict[str, Any]]) -> None:
    """Write the code quality report, UTF-8; ``UsageError`` when the file cannot be written."""
    write_json(path, document, what="code quality report", ensure_ascii=False)
