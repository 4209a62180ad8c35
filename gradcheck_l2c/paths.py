"""Output paths checked before the traced script starts, so a bad one costs a one-line error, not a run.

Every front door that writes after the run (``--json``, ``--render``, ``--gradcheck-render``, and any
new report format) checks its path here first. Files are not touched; a folder to render into is made now
(a folder some systems refuse, like one under ``/proc``, shows only when it is made).
"""
from __future__ import annotations

import os

from gradcheck_l2c.errors import UsageError


def output_file(path: str, option: str) -> str:
    """The absolute path of a file to write later; ``UsageError`` now if it could not be written.

    ``option`` names the setting in the message (``"--json"``). The path is made absolute because the
    script may change the working folder.
    """
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    if os.path.isdir(path):
        raise UsageError(f"{option}: {path!r} is a folder; give a file name inside it")
    if not os.path.isdir(folder):
        raise UsageError(f"{option}: folder {folder!r} does not exist")
    if not os.access(path if os.path.exists(path) else folder, os.W_OK):
        raise UsageError(f"{option}: cannot write {path!r} (no permission, or a read-only file system)")
    return path


def output_folder(path: str, option: str) -> str:
    """The absolute path of a folder to write into later (made then if missing); ``UsageError`` now
    if it is a file, or if it could not be made or written to."""
    path = os.path.abspath(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"{option}: {path!r} is a file, not a folder")
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise UsageError(f"{option}: cannot make folder {path!r}: {existing!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option}: cannot write in {existing!r} (no permission, or a read-only file system)")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as error:
        raise UsageError(f"{option}: cannot make folder {path!r}: {error.strerror or error}") from None
    return path


def distinct_outputs(script: str | None, outputs: dict[str, str]) -> None:
    """Refuse, before the run, an output path that would overwrite what the run reads: the script itself, a
    Python file in the script's folder tree (the script may import it), or a path two options share.

    ``script`` is the file that runs (for ``-m``, the module's file once found), or a folder run through its
    ``__main__.py``."""
    seen: dict[str, str] = {}
    real_script = os.path.realpath(script) if script else None
    tree = None
    if real_script is not None:
        tree = (real_script if os.path.isdir(real_script) else os.path.dirname(real_script)) + os.sep
    for option, path in outputs.items():
        real = os.path.realpath(path)
        if real in seen:
            raise UsageError(f"{option}: {path!r} is also the {seen[real]} output; give each report its own file")
        seen[real] = option
        if real == real_script:
            raise UsageError(f"{option}: {path!r} is the script being traced; writing the report there would "
                             "overwrite it")
        if tree is not None and real.endswith((".py", ".pyw")) and os.path.isfile(real) and real.startswith(tree):
            raise UsageError(f"{option}: {path!r} is Python source beside the script (the run may import it); "
                             "write the report to another file")
