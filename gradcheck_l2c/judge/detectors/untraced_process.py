"""`untraced_process`: child processes started with multiprocessing that could not be traced, so nobody judged them.

Children are traced and report to the parent (see gradcheck_l2c/children.py); one that could not be (its class
overrides ``run()``, it was killed, or it still ran when the trace ended) would otherwise end in "no findings"
for a cut nobody looked at.
"""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "untraced_process"


def scan(run) -> list[Finding]:
    found = []
    for (site, why), count in sorted(run.record.children.items(), key=lambda item: item[1], reverse=True):
        processes = f"{count} child {'process' if count == 1 else 'processes'}"
        found.append(run.finding(
            KIND, "warning", processes, site,
            f"{processes} started here with multiprocessing ran untraced ({why}): a gradient cut inside "
            f"{'it' if count == 1 else 'them'} is not in this report.",
            "give the Process a target instead of overriding run(), join the children before the script ends, or "
            "trace the training code in the worker with gradcheck_l2c.trace().",
            count,
        ))
    return found
