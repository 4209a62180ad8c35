"""The ``--sarif`` document: SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

One run; the driver lists every rule (``GC001 item`` ...); each finding is a result at its line (and
column when known), its related places linked from the message as ``[text](id)``, a fingerprint that
survives edits elsewhere in the file, ``suppressions`` when a ``# gradcheck: ignore`` silenced it, and
``fixes`` (the replacement of whole lines) when ``gradcheck-l2c fix`` wrote its change.
Paths inside the repository are relative to its root (``%SRCROOT%``); others are absolute ``file://`` URIs.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gradcheck_l2c.present.jsonreport import write_json
from gradcheck_l2c.present.repository import fingerprint, relative_path
from gradcheck_l2c.records import Finding, Related
from gradcheck_l2c.rules import RULES, Rule, code_of

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/gradcheck-l2c/"
ROOT_ID = "%SRCROOT%"
#: The key of the fingerprint in ``partialFingerprints``; its version goes up if the hash changes.
FINGERPRINT_KEY = "gradcheckL2c/v1"
_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
_ROLES = {"symptom": "where the symptom showed", "defined": "where it was defined", "used": "where it was used",
          "disabled": "where gradients were turned off"}


def sarif_document(findings: Iterable[Finding], *, version: str, root: str | None,
                   exit_code: int = 0) -> dict[str, Any]:
    """The SARIF log of one trace. ``root``: the repository root that relative URIs start from (None:
    every URI absolute); ``exit_code``: the trace's exit status, recorded in the invocation."""
    index = {rule.code: position for position, rule in enumerate(RULES)}
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "gradcheck-l2c",
            "version": version,
            "semanticVersion": version,
            "informationUri": INFORMATION_URI,
            "rules": [_rule(rule) for rule in RULES],
        }},
        "invocations": [{"executionSuccessful": True, "exitCode": exit_code}],
        "columnKind": "unicodeCodePoints",
        "results": [_result(finding, index, root) for finding in findings],
    }
    if root is not None:
        run["originalUriBaseIds"] = {ROOT_ID: {"uri": _file_uri(root, folder=True)}}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def write_sarif(path: str, document: dict[str, Any]) -> None:
    """Write the SARIF report, UTF-8; ``UsageError`` when the file cannot be written."""
    write_json(path, document, what="SARIF report", ensure_ascii=False)


def _rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.kind,
        "shortDescription": {"text": rule.description},
        "fullDescription": {"text": f"{rule.description} Fix: {rule.fix}"},
        "help": {"text": f"{rule.description}\nFix: {rule.fix}",
                 "markdown": f"{rule.description}\n\n**Fix:** {rule.fix}"},
        "defaultConfiguration": {"level": _LEVELS[rule.level]},
        "properties": {"tags": ["pytorch", "autograd"]},
    }


def _result(finding: Finding, index: dict[str, int], root: str | None) -> dict[str, Any]:
    code = code_of(finding.kind)
    text = f"{finding.tensor}: {finding.message}" if finding.tensor else finding.message
    related = []
    links = []
    for number, place in enumerate(finding.related, start=1):
        related.append({"id": number, "physicalLocation": _physical(place.file, place.line, None, place.code, root),
                        "message": {"text": _ROLES.get(place.role, place.role)}})
        links.append(f"[{_link_text(place)}]({number})")
    if links:
        text += " See " + ", ".join(links) + "."
    if finding.processes:
        text += f" (in process {', '.join(finding.processes)})"
    if finding.fix:
        text += f" Fix: {finding.fix}"
    result: dict[str, Any] = {
        "ruleId": code,
        "level": _LEVELS.get(finding.severity, "warning"),
        "message": {"text": text},
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(finding)},
        "properties": {"kind": finding.kind, "tensor": finding.tensor, "count": finding.count},
    }
    if finding.processes:
        result["properties"]["processes"] = list(finding.processes)
    if code in index:
        result["ruleIndex"] = index[code]
    if not finding.file.startswith("<"):
        result["locations"] = [{"physicalLocation": _physical(finding.file, finding.line, finding.column,
                                                              finding.code, root)}]
    if related:
        result["relatedLocations"] = related
    if finding.fix_diff and not finding.file.startswith("<"):
        result["fixes"] = [{"description": {"text": finding.fix or "the mechanical fix"},
                            "artifactChanges": [{"artifactLocation": _artifact(finding.file, root),
                                                 "replacements": replacements(finding.fix_diff)}]}]
    if finding.suppressed:
        result["suppressions"] = [{"kind": "inSource", "status": "accepted",
                                   "justification": "a '# gradcheck: ignore' comment on the line"}]
    return result


def replacements(diff: str) -> list[dict[str, Any]]:
    """SARIF replacements from a one-file unified diff: each run of removed and added lines replaces whole lines
    (from column 1 of its first line to column 1 of the line after it)."""
    found: list[dict[str, Any]] = []
    old_line, start, removed, added = 0, 0, 0, []

    def flush() -> None:
        if removed or added:
            found.append({"deletedRegion": {"startLine": start, "startColumn": 1, "endLine": start + removed,
                                            "endColumn": 1},
                          "insertedContent": {"text": "".join(added)}})

    for line in diff.splitlines(keepends=True):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            flush()
            old_line, removed, added = int(line.split()[1].lstrip("-").split(",")[0]), 0, []
            start = old_line
        elif line.startswith("-"):
            if not removed and not added:
                start = old_line
            removed += 1
            old_line += 1
        elif line.startswith("+"):
            if not removed and not added:
                start = old_line
            added.append(line[1:])
        elif line.startswith(" "):
            flush()
            removed, added = 0, []
            old_line += 1
    flush()
    return found


def _link_text(place: Related) -> str:
    """``where it was defined (model.py:12)``, with the brackets SARIF link text must escape."""
    text = f"{_ROLES.get(place.role, place.role)} ({os.path.basename(place.file)}:{place.line})"
    return re.sub(r"([\\\[\]])", r"\\\1", text)


def _physical(file: str, line: int, column: int | None, code: str, root: str | None) -> dict[str, Any]:
    location: dict[str, Any] = {"artifactLocation": _artifact(file, root)}
    if line > 0:
        region: dict[str, Any] = {"startLine": line}
        if column:
            region["startColumn"] = column
        if code:
            region["snippet"] = {"text": code}
        location["region"] = region
    return location


def _artifact(file: str, root: str | None) -> dict[str, Any]:
    """Relative to ``%SRCROOT%`` when ``file`` lies inside the repository, else an absolute file URI."""
    relative = relative_path(file, root)
    if relative is not None:
        return {"uri": quote(relative), "uriBaseId": ROOT_ID}
    return {"uri": _file_uri(file)}


def _file_uri(path: str, *, folder: bool = False) -> str:
    """``file:///abs/path`` with spaces and non-ASCII percent-encoded; a folder's URI ends with ``/``."""
    uri = Path(os.path.abspath(path)).as_uri()
    return uri + "/" if folder and not uri.endswith("/") else uri
