"""`inplace_saved`: backward failed because a tensor it saved was changed in place.

PyTorch names only the tensor's shape and version; we add the line of the in-place write and the
operation (and line, when known) that saved the tensor. Other in-place writes on the path of a
gradient that went missing are listed as notes (``info``): autograd records them, they cut nothing.
"""
from __future__ import annotations

import re

from gradcheck_l2c.judge.sites import node_site
from gradcheck_l2c.record import graph
from gradcheck_l2c.record.locations import user_frame, user_site
from gradcheck_l2c.records import Finding

KIND = "inplace_saved"
_MESSAGE = re.compile(
    r"\[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\](?:, which is output \d+ of (?P<producer>\w+),)? "
    r"is at version (?P<version>\d+)")


def explain(state, text: str, roots) -> str | None:
    """Record the finding and return the note added to PyTorch's error."""

    match = _MESSAGE.search(text)
    if match is None:
        return None
    shape = tuple(int(s) for s in match["shape"].replace(" ", "").split(",") if s)
    version = int(match["version"])
    saver = _saver(roots)
    saver_name = type(saver).__name__ if saver is not None else "an operation"
    saver_site = node_site(saver)
    saved_at = f" at {saver_site}" if saver_site else ""
    symptom = user_site(2)
    write = _write(state, shape, version, exact=True)
    step = _stepped(state, shape, version) if write is None else None
    if step is not None:
        optimizer = _optimizer_name(step)
        state.events.record(KIND, -1, step.step_site, f"{optimizer}.step()", saver=saver_name,
                            saver_site=saver_site, symptom=symptom, optimizer=step.name)
        return (f"gradcheck-l2c: {saver_name}{saved_at} saved a parameter for backward; `{optimizer}.step()` "
                f"({step.name}) at {step.step_site} then updated it in place, before this backward.")
    write = write or _write(state, shape, version, exact=False)
    if write is None:
        return f"gradcheck-l2c: the tensor was saved by {saver_name}{saved_at}; its in-place write was not seen."
    site, op = write
    state.events.record(KIND, -1, site, op, saver=saver_name, saver_site=saver_site, symptom=symptom)
    return (f"gradcheck-l2c: {saver_name}{saved_at} saved this tensor for backward; "
            f"`{op}` at {site} then changed it in place.")


def _write(state, shape: tuple[int, ...], version: int, exact: bool):
    """The latest in-place write in grad mode that left a tensor of this shape at this version; or,
    not ``exact``, the latest at this version (a write into the tensor a saved view belongs to,
    `out[:, :2] = ...`)."""
    for site, op, written_shape, _, written_version in reversed(state.inplace_log):
        if written_version == version and (written_shape == shape or not exact):
            return site, op
    return None


def _stepped(state, shape: tuple[int, ...], version: int):
    """The optimizer whose latest ``step()`` holds a parameter of this shape (or its transpose, which
    linear layers save) now at this version: that step changed it after the graph saved it."""
    for record in sorted(state.optimizers, key=lambda r: r.step_order, reverse=True):
        optimizer = record.optimizer()
        if optimizer is None or record.step_site is None:
            continue
        for group in optimizer.param_groups:
            for param in group["params"]:
                if param._version == version and tuple(param.shape) in (shape, shape[::-1]):
                    return record
    return None


def _optimizer_name(record) -> str:
    """The variable the user's code holds the optimizer in (``opt_D``), else its class."""
    optimizer = record.optimizer()
    frame = user_frame(3)
    while optimizer is not None and frame is not None:
        for name, value in frame.f_locals.items():
            if value is optimizer and name != "self":
                return name
        frame = frame.f_back
    return record.name


def scan(run) -> list[Finding]:
    found = []
    for (site, label), (keys, count) in run.state.inplace_seen.items():
        for key in sorted(keys & run.keys):
            watched = run.state.registry.all[key]
            if watched.ever_grad or not run.expected_or_optimized(watched):
                continue
            found.append(run.finding(
                KIND, "info", watched.name, site,
                f"`{label}` wrote in place into a tensor computed from {watched.name}; autograd records "
                "such writes (CopySlices), so this line does not cut the gradient.",
                "nothing to change here; look at the causes listed for this tensor.",
                count,
            ))
    for event in run.state.events.of_kind(KIND):
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
        else:
            message = (f"`{event.detail}` changed in place a tensor that {saver}{saved_at} had saved for "
                       "backward, so backward failed.")
            fix = _out_of_place(event.detail)
        found.append(run.finding(KIND, "error", saver, event.site, message, fix, event.count,
                                 related={"symptom": symptom}))
    return found


def _out_of_place(op: str) -> str:
    """The out-of-place form of the in-place write ``op``: for an assignment into part of a tensor, a copy."""
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


def _saver(roots):
    """The node whose saved tensor is stale: reading it raises the same error."""
    for node in graph.iter_nodes(graph.grad_roots([r for r in roots if r.requires_grad]), graph.SAFE_WALK):
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            try:
                getattr(node, attr)
            except RuntimeError as error:
                if "modified by an inplace operation" in str(error):
                    return node
    return None
