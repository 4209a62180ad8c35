"""Where the script saw the missing gradient: an error about a tensor whose ``.grad`` user code read and found None or
zeros carries that read as its symptom, whichever detector made it (a warning, such as two optimizers holding the
tensor, does not explain that read)."""
from __future__ import annotations

import dataclasses
import re

from gradcheck_l2c.records import Finding, Related

_MORE = re.compile(r" and \d+ more$")


def with_symptoms(run, findings: list[Finding]) -> list[Finding]:
    """``findings``, each error without a symptom given the first ``.grad`` read of the tensors it names."""
    reads = {w.name: w.grad_read for w in run.record.watched() if w.grad_read is not None}
    if not reads:
        return findings
    shown = []
    for finding in findings:
        site = None
        if finding.severity == "error" and not any(r.role == "symptom" for r in finding.related):
            site = next((reads[name] for name in _MORE.sub("", finding.tensor).split(", ") if name in reads), None)
        if site is not None and (site.file, site.line) != (finding.file, finding.line):
            finding = dataclasses.replace(finding, related=(*finding.related,
                                                            Related(site.file, site.line, "symptom", site.code)))
        shown.append(finding)
    return shown
