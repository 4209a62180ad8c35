"""Add what the trace knows to PyTorch's own backward errors ("modified by an inplace operation",
"does not require grad"), keeping their type and traceback."""
from __future__ import annotations

import torch

from gradcheck_l2c.judge.detectors import inplace_saved
from gradcheck_l2c.record.locations import user_frame, user_site
from gradcheck_l2c.record.state import TraceState


def explain_backward_error(state: TraceState, error: RuntimeError, roots: list[torch.Tensor]) -> None:
    """Add what the trace knows to PyTorch's backward error (its type and traceback stay the same)."""
    text = str(error)
    if "modified by an inplace operation" in text:
        note = inplace_saved.explain(state, text, roots)
    elif "does not require grad" in text:
        state.graphless.append(user_site(1))  # the symptom: judged with the rest at the end
        frame = user_frame(1)
        if frame is not None:
            state.discover(frame)
        note = _explain_graphless(state, roots)
    else:
        note = None
    if note:
        error.add_note(note)


def _explain_graphless(state: TraceState, roots: list[torch.Tensor]) -> str | None:
    taint = None
    for root in roots:
        taint = state.taints.merge(taint, state.taints.get(root))
    frame = user_frame(3)
    if taint is None and frame is not None:  # a variable rebound to a no_grad copy of a watched leaf?
        for value in frame.f_locals.values():
            taint = state.taints.merge(taint, state.replacement_of(value))
    if taint is None:
        return None
    state.dead_ends.append(taint)
    state.registry.resolve_names()
    cut: dict[tuple, list[str]] = {}
    for key, chain in taint.chains.items():
        state.registry.all[key].got_grad = False
        for event in chain:
            cut.setdefault((event.site, event.detail, event.kind), []).append(state.registry.all[key].name)
    lines = ["gradcheck-l2c: this value has no autograd graph because its inputs were cut off:"]
    for (site, detail, kind), names in cut.items():
        lines.append(f"  {site}: {kind}: `{detail}` cut {', '.join(dict.fromkeys(names))}")
    return "\n".join(lines)
