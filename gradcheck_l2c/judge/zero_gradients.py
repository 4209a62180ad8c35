"""Gradients that arrived exactly zero: the op that flattened their path when the run saw one, else one note for all
of them (the model's mathematics, or underflow through depth)."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.judge.listing import listed
from gradcheck_l2c.record.facts import Watched
from gradcheck_l2c.records import Finding

_NAMES_IN_NOTE = 4
_DEPTH = 20  # this many tensors with exactly-zero gradients: the depth explains it, not each tensor


def zero_gradient_findings(run: Any, zero: list[Watched]) -> list[Finding]:
    """Gradients that arrived but were exactly zero. A zero-derivative op on the way (``round``,
    ``sign``) is a cut: an error there; an index or a mask made on the way (``argmax``, ``x > 0``) is
    none. Otherwise it is mathematics (a loss invariant to the tensor, a piecewise-linear function's
    second derivative, dead ReLUs, underflow through depth): one note for all of them, with how many
    tensors it covers."""
    findings: list[Finding] = []
    plain: list[Watched] = []
    tests = _tests_of(run, {watched.key for watched in zero})
    for watched in zero:
        # a path of values flattened (a softmax over one element, round) zeroes a gradient that arrives; indices and
        # masks (a top-k's routing) carry none by design and zero none: a gradient that arrived came another way
        events = [e for e in run.record.events_for(watched.key)
                  if e.kind == "non_differentiable" and e.extra.get("output") not in ("integer", "bool")]
        tested = [e for e in run.record.events_for(watched.key) if (e.site, e.detail) in tests]
        if events:
            findings.extend(run.cut_finding(e, watched.name) for e in sorted(events, key=lambda e: e.order))
        elif tested:  # the branch a test of its own values picked left it out: the test is the line to change
            findings.extend(run.cut_finding(e, watched.name, watched.grad_read) for e in tested)
        else:
            plain.append(watched)
    if not plain:
        return findings
    first = plain[0]
    names = listed(dict.fromkeys(w.name for w in plain), _NAMES_IN_NOTE)
    if len(plain) >= _DEPTH:
        why = (f"{len(plain)} tensors ({names}) received gradients that are exactly zero: most likely they "
               "vanished (underflowed) on the way back through many layers")
        fix = ("nothing to change if this is expected; otherwise shorten the path between them and the loss "
               "(residual connections, normalisation, ReLU/GELU instead of sigmoid).")
    else:
        fix = ("nothing to change if the loss is not meant to depend on them here; otherwise look for what "
               "flattens the path to the loss (a saturated activation, dead ReLUs, a clamp, a term that cancels).")
        one = len(plain) == 1
        why = (f"{names} received {'a gradient that is' if one else 'gradients that are'} exactly zero: the "
               f"loss does not change with {'it' if one else 'them'} here (a loss invariant to it, a "
               "piecewise-linear function's second derivative, dead ReLUs, or underflow through depth)")
    findings.append(run.finding(
        "non_differentiable", "info", first.name, run.record.defined_at(first),
        why + "; no cut explains it, so this is the mathematics of the model, not a bug in the code.",
        fix,
        count=len(plain),
    ))
    return findings


def _tests_of(run: Any, zero: set[int]) -> set[tuple[Any, str]]:
    """The (line, op) of the single-bool tests (``if torch.norm(b) == 0:``) computed only from tensors whose gradients
    were exactly zero: a test of a loss that others learn from (``if loss < best:``) explains no tensor's zeros."""
    keys: dict[tuple[Any, str], set[int]] = {}
    for event in run.record.events("non_differentiable"):
        if event.extra.get("test"):
            keys.setdefault((event.site, event.detail), set()).add(event.key)
    return {place for place, tested in keys.items() if tested <= zero}
