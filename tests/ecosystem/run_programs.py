"""Run the ecosystem programs untraced and traced, and their buggy twins traced, JOBS at a time.

    python run_programs.py OUT_DIR JOBS program.py [...] [-- twin.py [...]]

Each run is a process forked from this one by tests/realworld/driver.py's child (stdout, stderr, the
final parameters at $REALWORLD_STATE and ``--json`` findings, under the same file names), so torch,
the tracer and the libraries named in $ECOSYSTEM_PRELOAD (comma-separated modules) are imported once,
here, before any fork. A program ``name`` runs as ``name.plain`` and ``name.traced``, a twin as
``twin-name.plain`` and ``twin-name.traced``. Each run also leaves ``.status`` (its exit status) and
``.seconds`` (its wall time) beside its output; a run past $ECOSYSTEM_RUN_LIMIT seconds (default 180)
is killed by SIGALRM and its status is then -14.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import signal
import sys
import time
from pathlib import Path

_REALWORLD_DRIVER = Path(__file__).resolve().parent.parent / "realworld" / "driver.py"
_spec = importlib.util.spec_from_file_location("realworld_driver", _REALWORLD_DRIVER)
realworld_driver = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(realworld_driver)  # imports torch and the tracer's CLI, once


def _preload() -> None:
    """Import the libraries the programs use before forking, so each run does not pay for them again."""
    for module in filter(None, os.environ.get("ECOSYSTEM_PRELOAD", "").split(",")):
        try:
            importlib.import_module(module.strip())
        except ImportError:
            pass  # the test skips what is missing; a program that needs it then fails on its own


def _start(out_dir: str, name: str, label: str, program: str, limit: int) -> int:
    pid = os.fork()
    if pid == 0:
        signal.alarm(limit)
        realworld_driver._child(out_dir, name, label, program)  # never returns: os._exit(status)
    return pid


def main(argv: list[str]) -> int:
    out_dir, jobs, rest = argv[0], int(argv[1]), argv[2:]
    programs, twins = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    limit = int(os.environ.get("ECOSYSTEM_RUN_LIMIT", "180"))
    _preload()
    queue = []
    for name, program in [(Path(p).stem, p) for p in programs] + [(f"twin-{Path(t).stem}", t) for t in twins]:
        queue += [(name, "plain", program), (name, "traced", program)]
    running: dict[int, tuple[str, str, float]] = {}
    while queue or running:
        while queue and len(running) < jobs:
            name, label, program = queue.pop(0)
            running[_start(out_dir, name, label, program, limit)] = (name, label, time.monotonic())
        pid, wait_status = os.wait()
        name, label, started = running.pop(pid)
        base = os.path.join(out_dir, f"{name}.{label}")
        Path(base + ".status").write_text(str(os.waitstatus_to_exitcode(wait_status)))
        Path(base + ".seconds").write_text(f"{time.monotonic() - started:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
