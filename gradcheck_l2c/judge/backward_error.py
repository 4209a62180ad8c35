"""Word what the trace knows about an error autograd raised, as the note added to that error: the in-place
write that made a saved tensor stale, the cuts that left a loss without graph (or an input of ``autograd.grad`` out
of the outputs' graph), and for autograd's other
refusals the line to change (`detectors/autograd_error.py` words those)."""
from __future__ import annotations

from gradcheck_l2c.judge.detectors import autograd_error, inplace_saved
from gradcheck_l2c.record.facts import AutogradError, Graphless, StaleSaved


def word_failure(fact: AutogradError) -> str | None:
    """The note for PyTorch's error (its type and traceback stay the same), or None."""
    failure = fact.failure
    if isinstance(failure, StaleSaved):
        return inplace_saved.note(failure)
    if isinstance(failure, Graphless) and failure.cuts:
        lines = ["gradcheck-l2c: the outputs' graph does not reach that input: its values came in only through these "
                 "cuts:" if fact.category == "unused_input" else
                 "gradcheck-l2c: this value has no autograd graph because its inputs were cut off:"]
        lines += [f"  {site}: {kind}: `{detail}` cut {', '.join(names)}" for site, detail, kind, names in failure.cuts]
        return "\n".join(lines)
    return autograd_error.note(fact)
