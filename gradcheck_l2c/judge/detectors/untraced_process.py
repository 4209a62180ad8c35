"""`untraced_process`: child processes started with multiprocessing ran untraced, so nobody judged them.

A spawned child starts a fresh interpreter without the trace; a forked one inherits it, but only the parent
reports. A training step in a worker would otherwise end in "no findings" for a cut nobody looked at.
"""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "untraced_process"


def scan(run) -> list[Finding]:
    found = []
    for site, count in sorted(run.record.children.items(), key=lambda item: item[1], reverse=True):
        processes = f"{count} child {'process' if count == 1 else 'processes'}"
        found.append(run.finding(
            KIND, "warning", processes, site,
            f"{processes} started here with multiprocessing ran untraced: a gradient cut inside "
            f"{'it' if count == 1 else 'them'} is not in this report.",
            "trace the training code in the process that runs it (with gradcheck_l2c.trace() inside the worker), "
            "or run it in the main process while checking gradients.",
            count,
        ))
    return found
