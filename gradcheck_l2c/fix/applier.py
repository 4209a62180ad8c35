"""Edits into files: the new text of each file a set of edits touches, the unified diff people read and
``git apply`` takes, and ``--write``'s safe write (inside the project only, never over uncommitted changes,
a ``.orig`` copy first)."""
from __future__ import annotations

import difflib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.fix.planner import Edit

_WRITABLE = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


def patched(edits: Iterable[Edit]) -> dict[str, tuple[str, str]]:
    """``{file: (old text, new text)}`` for the files the edits change, all of a file's edits applied at once."""
    by_file: dict[str, list[Edit]] = {}
    for edit in edits:
        by_file.setdefault(edit.file, []).append(edit)
    texts = {}
    for file, group in by_file.items():
        rewrites: dict[int, list] = {}
        for edit in group:
            for node, functions in edit.change.rewrites.items():
                rewrites.setdefault(node, []).extend(functions)
        source = group[0].source
        new = source.apply(rewrites)
        if new != source.text:
            texts[file] = (source.text, new)
    return texts


def unified_diff(texts: dict[str, tuple[str, str]], start: str | None = None) -> str:
    """The changes as one unified diff, paths relative to ``start`` (the working folder) with git's ``a/`` and
    ``b/`` prefixes."""
    chunks = []
    for file, (old, new) in sorted(texts.items()):
        name = os.path.relpath(file, start or os.getcwd())
        chunks.extend(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                           fromfile=f"a/{name}", tofile=f"b/{name}"))
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in chunks)


def project_root(script: str) -> str:
    """The project a script belongs to: its git repository's top folder, else the script's own folder."""
    folder = os.path.dirname(os.path.abspath(script))
    try:
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, text=True,
                             check=False).stdout.strip()
    except OSError:  # no git
        top = ""
    return top or folder


def refusals(files: Iterable[str], root: str) -> list[tuple[str, bool]]:
    """Why ``--write`` must not touch each such file, and whether ``--force`` overrides it: outside the
    project or not writable (never), uncommitted changes or a ``.orig`` copy already there (with ``--force``)."""
    found = []
    for file in files:
        if os.path.commonpath([os.path.abspath(file), root]) != root:
            found.append((f"{file} is outside the project {root}", False))
        elif not os.access(file, os.W_OK) or not os.stat(file).st_mode & _WRITABLE:  # marked read-only: even root
            found.append((f"{file} is not writable", False))
        elif _uncommitted(file):
            found.append((f"{file} has uncommitted changes (commit or stash them, or pass --force)", True))
        elif os.path.exists(file + ".orig"):
            found.append((f"{file}.orig exists already (move it away, or pass --force)", True))
    return found


def write_patched(texts: dict[str, tuple[str, str]], root: str, *, force: bool = False) -> list[str]:
    """Write the new texts, each file's original kept as ``file.orig``; ``UsageError`` listing every refusal
    before anything is written."""
    problems = [problem for problem, forceable in refusals(texts, root) if not (force and forceable)]
    if problems:
        raise UsageError("--write changed nothing: " + "; ".join(problems))
    written = []
    for file, (_, new) in sorted(texts.items()):
        shutil.copy2(file, file + ".orig")
        with open(file, "w", encoding="utf-8") as handle:
            handle.write(new)
        written.append(file)
    return written


def _uncommitted(file: str) -> bool:
    """Whether git knows ``file`` differs from its last commit (an untracked file does not: ``.orig`` keeps it)."""
    try:
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", os.path.basename(file)],
                                cwd=os.path.dirname(os.path.abspath(file)), capture_output=True, text=True,
                                check=False)
    except OSError:
        return False
    return status.returncode == 0 and bool(status.stdout.strip())
