"""Where the repository starts, and what names a finding across runs: shared by the formats that CI
systems read (SARIF for GitHub code scanning, GitLab's code quality report)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from gradcheck_l2c.records import Finding


def repository_root(start: str) -> str | None:
    """The nearest folder at or above ``start`` that holds ``.git`` (a folder, or a worktree's file)."""
    folder = Path(os.path.abspath(start))
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return None


def relative_path(file: str, root: str | None) -> str | None:
    """``file`` relative to ``root`` with ``/`` separators, or None when it lies outside (or no root)."""
    if root is None:
        return None
    try:
        relative = os.path.relpath(os.path.abspath(file), root)
    except ValueError:  # another drive on Windows
        return None
    if relative.startswith(os.pardir) or os.path.isabs(relative):
        return None
    return Path(relative).as_posix()


def fingerprint(finding: Finding) -> str:
    """Stable across runs and edits elsewhere: kind, tensor and the code line without its whitespace (a
    reformatter changes nothing); the line number is left out on purpose."""
    code = "".join(finding.code.split())
    return hashlib.sha256(f"{finding.kind}\0{finding.tensor}\0{code}".encode()).hexdigest()[:32]
