"""`untraced_thread`: backward passes ran in a thread the trace does not cover, so nobody judged them.

PyTorch's torch-function modes are per thread: a training step in a worker thread is invisible to
the trace, and "no findings" would hide that its gradients were never checked.
"""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "untraced_thread"


def scan(run) -> list[Finding]:
    found = []
    for (thread, site), count in sorted(run.record.untraced.items(), key=lambda item: item[1], reverse=True):
        calls = f"{count} backward {'call' if count == 1 else 'calls'}"
        found.append(run.finding(
            KIND, "warning", f"thread {thread}", site,
            f"{calls} ran in thread {thread}, which is not traced (PyTorch's torch-function modes are per "
            "thread): whether they reached the watched tensors was not judged.",
            "run the training step in the thread that starts the trace, or start the trace inside that "
            "thread (one trace at a time).",
            count,
        ))
    return found
