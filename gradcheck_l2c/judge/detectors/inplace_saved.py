"""`inplace_saved`: backward failed because a tensor it saved was changed in place.

PyTorch names only the tensor's shape and version; we add the line of the in-place write and the
operation (and line, when known) that saved the tensor. Other in-place writes on the path of a
gradient that went missing are listed as notes (``info``): autograd records them, they cut nothing.
"""
from __future__ import annotations

from gradcheck_l2c.record.facts import StaleSaved
from gradcheck_l2c.records import Finding

KIND = "inplace_saved"


def note(failure: StaleSaved) -> str:
    """The note added to PyTorch's error: who saved the tensor, and which write made it stale."""
    saved_at = f" at {failure.saver_site}" if failure.saver_site else ""
    if failure.optimizer is not None:
        return (f"gradcheck-l2c: {failure.saver}{saved_at} saved a parameter for backward; `{failure.writer}` "
                f"({failure.optimizer}) at {failure.write_site} then updated it in place, before this backward.")
    if failure.writer is None:
        return f"gradcheck-l2c: the tensor was saved by {failure.saver}{saved_at}; its in-place write was not seen."
    return (f"gradcheck-l2c: {failure.saver}{saved_at} saved this tensor for backward; "
            f"`{failure.writer}` at {failure.write_site} then changed it in place.")


def scan(run) -> list[Finding]:
    found = []
    for (site, label), written in run.record.inplace_notes.items():
        for key in sorted(written.keys & run.keys):
            watched = run.record.watched_at(key)
            if watched.ever_grad or not run.expected_or_optimized(watched):
                continue
            found.append(run.finding(
                KIND, "info", watched.name, site,
                f"`{label}` wrote in place into a tensor computed from {watched.name}; autograd records "
                "such writes (CopySlices), so this line does not cut the gradient.",
                "nothing to change here; look at the causes listed for this tensor.",
                written.count,
            ))
    for event in run.record.events(KIND):
        saver = event.extra.get("saver", "an operation")
        saver_site = event.extra.get("saver_site")
        saved_at = f" (at {saver_site})" if saver_site else ""
        symptom = event.extra.get("symptom")
        if "optimizer" in event.extra:
            message = (f"`{event.detail}` ({event.extra['optimizer']}) updated parameters in place that "
                       f"{saver}{saved_at} had saved for a backward still to come (at {symptom}), so that "
                       "backward failed.")
            fix = (f"call {event.detail} after every backward that uses the old weights (all backward() "
                   "calls first, then the steps), or recompute the forward pass after the step.")
        elif event.extra.get("own"):
            op, later = event.detail, event.extra["later"]
            saver = f"{op.strip('_')} (in place)"
            message = (f"`{op}` computed its result in place, into a view, and saved that result for backward; the "
                       f"write at {later} into the tensor it is a view of (another part of it) then moved the version "
                       "they share, so backward failed.")
            fix = (f"compute it out of place and assign the result (`y[...] = y[...].{op.strip('_')}()`, or "
                   f"`y = y.{op.strip('_')}()`), so that writes after it leave the saved result alone.")
        else:
            message = (f"`{event.detail}` changed in place a tensor that {saver}{saved_at} had saved for "
                       "backward, so backward failed.")
            fix = _out_of_place(event.detail)
        found.append(run.finding(KIND, "error", saver, event.site, message, fix, event.count,
                                 related={"symptom": symptom, "used": event.extra.get("later")}))
    return found


def _out_of_place(op: str) -> str:
    """The out-of-place form of the in-place write ``op``: for an assignment into part of a tensor, a copy."""
    if op.endswith("(out=...)"):
        return (f"drop out= and keep the result as a new tensor (u = {op[:-9]}(...)), or .clone() the tensor written "
                "into where the forward uses it, so the value saved for backward is not overwritten.")
    if op.endswith("(inplace=True)"):
        return (f"build the layer with inplace=False (where `{op}` is made, or where its inplace is set), so it "
                "returns a new tensor instead of overwriting the one saved for backward.")
    name = op.strip("_")
    if name in ("setitem", "index_put", "masked_fill", "masked_scatter", "scatter", "index_fill", "index_copy",
                "copy", "fill", "zero"):
        return ("write into a copy (x = x.clone() before changing it), or build the result out of place "
                "(torch.where, torch.cat, x.masked_fill(...) without the trailing underscore).")
    if name.startswith("i") and name[1:] in ("add", "sub", "mul", "truediv", "div", "pow", "and", "or"):
        name = name[1:]  # `x += y` arrives as __iadd__
    if name in ("add", "sub", "mul", "div", "truediv", "pow", "addcmul", "addcdiv", "clamp", "and", "or"):
        return ("use the out-of-place form (x = x + y instead of x += y, x.add(y) instead of x.add_(y)), "
                "or .clone() the tensor before changing it.")
    return (f"use the out-of-place form of `{op}` (torch.{name}(x), or inplace=False on the layer), or .clone() "
            "the tensor before changing it.")
