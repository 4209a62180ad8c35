"""Run each realworld program twice, untraced and under ``gradcheck-l2c trace --json``, each run in a
process forked from this one (torch is imported once), and keep what the test compares.

    python driver.py OUT_DIR program.py [program.py ...]

For each program ``name`` it writes to OUT_DIR: ``name.plain.out`` / ``name.traced.out`` (stdout),
``name.traced.err`` (the report), ``name.plain.pt`` / ``name.traced.pt`` (the final parameters, saved
by the program at $REALWORLD_STATE), ``name.json`` (the findings) and ``name.status`` (both exit
statuses as ``plain traced``). The runs go two at a time where there are two CPUs (each is single-threaded:
OMP_NUM_THREADS=1), which changes none of their results.
"""
from __future__ import annotations

import os
import sys

import torch  # noqa: F401  (imported once, before forking)
import torch._dynamo  # noqa: F401  (so is dynamo, which an optimizer's constructor loads: 1.5-2 s a child otherwise)

from gradcheck_l2c import cli
from gradcheck_l2c.runner import ScriptRunner, run_script


def _child(out_dir: str, name: str, label: str, program: str) -> None:
    """In the forked child: send stdout/stderr to files, run the program, exit with its status."""
    base = os.path.join(out_dir, f"{name}.{label}")
    os.environ["REALWORLD_STATE"] = base + ".pt"
    for fd, suffix in ((1, ".out"), (2, ".err")):
        handle = os.open(base + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(handle, fd)
        os.close(handle)
    status = 1
    try:
        if label == "plain":
            outcome = run_script(ScriptRunner(program))
            status = 1 if outcome.exception is not None else outcome.exit_status
            if outcome.exception is not None:
                print(repr(outcome.exception), file=sys.stderr)
        else:
            status = cli.main(["trace", "--json", os.path.join(out_dir, f"{name}.json"), program])
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)


def _start(out_dir: str, name: str, label: str, program: str) -> int:
    """Fork a child that runs ``program`` untraced or traced (``label``); its pid."""
    pid = os.fork()
    if pid == 0:
        _child(out_dir, name, label, program)
    return pid


def main(argv: list[str]) -> int:
    out_dir, programs = argv[0], argv[1:]
    names = [os.path.splitext(os.path.basename(program))[0] for program in programs]
    waiting = [(name, label, program) for name, program in zip(names, programs) for label in ("plain", "traced")]
    waiting.reverse()  # popped from the end: in order
    parallel = min(2, len(os.sched_getaffinity(0)))
    running: dict[int, tuple[str, str]] = {}
    statuses: dict[tuple[str, str], int] = {}
    while waiting or running:
        while waiting and len(running) < parallel:
            name, label, program = waiting.pop()
            running[_start(out_dir, name, label, program)] = (name, label)
        pid, wait_status = os.wait()
        statuses[running.pop(pid)] = os.waitstatus_to_exitcode(wait_status)
    for name in names:
        with open(os.path.join(out_dir, f"{name}.status"), "w") as handle:
            handle.write(f"{statuses[name, 'plain']} {statuses[name, 'traced']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
