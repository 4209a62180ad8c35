"""Where a value autograd refused came from when the call that raised is not the line to change: the parameters the
script froze (a loss left without graph, a custom backward asking ``autograd.grad`` for them), the line that computed
a loss without graph from none of the tensors being trained, and the line of another
function that made a non-leaf whose ``requires_grad`` flag was then refused (a library's parameter store), and the
line that made the library object whose method runs the refusing code (a Trainer that turned inference mode on), and
the line that took a tensor apart into views that a later in-place write into it made unusable for the backward, the
user line inside a backward that raised (a custom Function's backward, a hook), and the line whose op has no derivative
where a backward reached it."""
from __future__ import annotations

import os
import re
from typing import Any

from torch import Tensor

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.code_lines import last_binding
from gradcheck_l2c.record.error_categories import multiple_views
from gradcheck_l2c.record.locations import LIBRARY, USER, Site, frame_kind
from gradcheck_l2c.record.names import resolve_names
from gradcheck_l2c.record.origins import Origins
from gradcheck_l2c.record.watch import Watched, WatchRegistry


def last_frozen(registry: WatchRegistry, every: bool) -> tuple[Watched | None, int]:
    """The last parameter made among those user code switched off (the head, the part a freezing loop means to
    keep trainable: its ``frozen_at`` is the line), and how many are off: if ``every`` live parameter is (a loss
    without graph), or any (a custom backward asked autograd.grad for one); None if not so."""
    params = [w for w in registry.all if w.is_parameter and w.tensor is not None]
    frozen = [w for w in params if w.frozen and w.frozen_at is not None]
    if not frozen or (every and not all(w.frozen for w in params)):
        return None, 0
    resolve_names(registry)
    return max(frozen, key=lambda w: w.key), len(params) if every else len(frozen)


def made_elsewhere(origins: Origins, tensor: Tensor | None, frame: Any) -> Site | None:
    """The line that made ``tensor`` (a result, not a leaf) in another function than ``frame``'s, which set its
    flag (a library's parameter store handed a cast of the user's leaf): the line to change; None if the same."""
    node = tensor.grad_fn if tensor is not None and frame is not None else None
    site = origins.made_at(node)  # a conversion's line, kept by `remember_site` past the first iteration
    if site is None:
        return None
    code = frame.f_code
    inside = site.file == os.path.abspath(code.co_filename) and site.line in {line for *_, line in code.co_lines()}
    return None if inside else site


def library_owner_made(frame: Any) -> Site | None:
    """Where user code made the library object whose method, called from user code, runs the code at ``frame`` now
    (``trainer.test(...)`` of a Lightning Trainer that turned inference mode on): at the outermost call from user code
    into a library's method, the line of the caller that last bound the name holding that object; None if none."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    caller = None
    for callee in reversed(frames):
        kind = frame_kind(callee.f_code.co_filename)
        if caller is not None and kind == LIBRARY:
            owner = callee.f_locals.get("self")
            name = next((n for n, v in caller.f_locals.items() if v is owner), None) if owner is not None else None
            line = last_binding(caller.f_code, name, caller.f_lineno) if name is not None else None
            return Site(os.path.abspath(caller.f_code.co_filename), line) if line is not None else None
        caller = callee if kind == USER else caller
    return None


def copy_used(registry: WatchRegistry, watched: Watched | None, nodes: list[Any]) -> dict[str, Any]:
    """For an input of ``autograd.grad`` that copy.deepcopy copied and the outputs were not computed from, the line
    that made the copy of its shape they were computed from instead (a model deep-copied for an inner loop)."""
    if watched is None or not watched.copied:
        return {}
    for node in nodes:
        copy = registry.get(node.variable) if hasattr(node, "variable") else None
        if copy is not None and copy.key != watched.key and copy.shape == watched.shape and copy.site is not None:
            return {"copy_made": copy.site}
    return {}


def graphless_cause(registry: WatchRegistry, frame: Any, subject: str, call: Site | None) -> tuple[Site | None, dict]:
    """For a backward refused because its loss has no graph (``call``, in ``frame``, on ``subject``): where the last
    parameter was frozen when all are; else, in a run that trains tensors, the line before the call that bound the
    loss, computed without any of them; else nothing."""
    last, count = last_frozen(registry, every=True)
    if last is not None:
        return last.frozen_at, {"frozen": count, "last": last.name}
    if frame is not None and call is not None and any(w.trainable() for w in registry.all):
        made = last_binding(frame.f_code, subject, call.line)
        if made is not None and made != call.line:
            return Site(call.file, made), {"bound_here": True}
    return None, {}


def multi_view_source(origins: Origins, roots: list[Tensor], text: str) -> tuple[Site | None, dict[str, Any]]:
    """A backward refused one of several views an op returned (``a, b = t``, ``unbind``, ``split``) because the tensor
    they came from was written into in place after they were made: the line that made them, the oldest such op in the
    graph of ``roots`` (a rollout unpacking each state of a buffer it fills), if the first iteration remembered it."""
    detail: dict[str, Any] = {**multiple_views(text), "at_backward": True}
    made_by = detail.get("made_by")
    return (origins.first_made_by(roots, str(made_by)) if made_by else None), detail


def raised_in(error: BaseException, call: Site | None) -> Site | None:
    """The innermost line of user code the error came from inside the backward (a custom Function's
    backward, a hook), if it is not the call itself."""
    found = None
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if frame_kind(code.co_filename) == USER:
            found = Site(os.path.abspath(code.co_filename), tb.tb_lineno)
        tb = tb.tb_next
    return found if found != call else None


_UNDERIVED = re.compile(r"derivative for '?([\w.:]+?)'? is not implemented")
#: The node autograd puts after an op that has no derivative formula: running it raises.
_NO_FORMULA = "NotImplemented"


def underived_site(origins: Origins, roots: list[Tensor], text: str) -> tuple[Site | None, dict[str, Any]]:
    """A backward refused because an op on its path has no derivative: the line that made that op's node (the
    ``NotImplemented`` node autograd put after it), and the op PyTorch's message names."""
    named = _UNDERIVED.search(text)
    detail = {"op": named[1]} if named else {}
    for node in graph.iter_nodes(graph.grad_roots(roots), graph.SAFE_WALK):
        if type(node).__name__ == _NO_FORMULA:
            made = origins.made_at(node)
            if made is not None:
                return made, detail
    return None, detail
