"""The ``--json`` document, for programs: what ran, how it ended, every watched tensor and every finding."""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.records import Finding, WatchedTensor

#: Version of the JSON document's layout; bumped when a field changes meaning, goes away or is added.
#: 2: every finding has ``fix_diff`` (its fix as a unified diff, ``gradcheck-l2c fix``) and ``verified``/
#: ``verify_note`` (what ``fix --verify`` made of it); empty strings otherwise.
JSON_VERSION = 2


def json_document(
    *,
    script: str,
    argv: Sequence[str],
    exit_code: int,
    watched: Iterable[WatchedTensor],
    findings: Iterable[Finding],
) -> dict[str, Any]:
    """The ``--json`` document: what ran, how it ended, every watched tensor and every finding."""
    return {
        "version": JSON_VERSION,
        "script": script,
        "argv": list(argv),
        "exit_code": exit_code,
        "watched": [tensor.to_dict() for tensor in watched],
        "findings": [finding.to_dict() for finding in findings],
    }


def write_json(path: str, document: Any, *, what: str = "JSON report", ensure_ascii: bool = True) -> None:
    """Write a JSON document (the ``--json`` report, SARIF, GitLab's), UTF-8, indented; ``UsageError``
    naming ``what`` when the file cannot be written."""
    try:
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(document, handle, indent=2, ensure_ascii=ensure_ascii)
            handle.write("\n")
    except OSError as exc:
        raise UsageError(f"cannot write the {what} to {path!r}: {exc.strerror}") from None
