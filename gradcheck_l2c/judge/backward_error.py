"""Word what the trace knows about a backward PyTorch refused, as the note added to its error
("modified by an inplace operation", "does not require grad")."""
from __future__ import annotations

from gradcheck_l2c.judge.detectors import inplace_saved
from gradcheck_l2c.record.facts import BackwardFailure, Graphless, StaleSaved


def word_failure(failure: BackwardFailure) -> str | None:
    """The note for PyTorch's error (its type and traceback stay the same), or None."""
    if isinstance(failure, StaleSaved):
        return inplace_saved.note(failure)
    if isinstance(failure, Graphless):
        lines = ["gradcheck-l2c: this value has no autograd graph because its inputs were cut off:"]
        lines += [f"  {site}: {kind}: `{detail}` cut {', '.join(names)}" for site, detail, kind, names in failure.cuts]
        return "\n".join(lines)
    return None
