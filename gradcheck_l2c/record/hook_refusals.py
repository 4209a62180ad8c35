"""Backwards refused inside a hook that autograd runs during another backward (a tensor hook, a module's backward
hook that differentiates something itself): autograd runs hooks with gradients off unless that backward was called
with ``create_graph=True``, so what a hook computes has no graph, and its own backward is refused with "does not
require grad". The error reaches the script through the outer backward, whose loss is fine.

The interceptor is off while autograd runs hooks, so the line that computed without a graph is read from the hook's
frame when the refusal passes through the engine: the line binding the refused root's variable (or the refused call's
own line), then back through the names each line reads, to the first line that reads a tensor or module that
requires grad.
"""
from __future__ import annotations

from types import FrameType
from typing import Any, NamedTuple

import torch
from torch import nn

from gradcheck_l2c.record.code_lines import last_binding, names_read
from gradcheck_l2c.record.locations import Site, frame_site
from gradcheck_l2c.record.names import variable_name

_DEPTH = 8  # lines followed back from the refused call at most


class HookRefusal(NamedTuple):
    """A backward refused at ``call`` inside ``hook``; ``made``: the line that computed ``subject`` (or what it came
    from) from values that require grad, with gradients off."""

    call: Site
    made: Site | None
    subject: str | None
    hook: str


class HookRefusals:
    """The latest refusal seen inside a hook, with the error that carries it out through the outer backward (one: the
    outer backward's failure takes it at once, and an error a hook caught itself is not kept past the next one)."""

    def __init__(self) -> None:
        self._latest: tuple[BaseException, HookRefusal] | None = None

    def refused(self, error: BaseException, roots: Any, frame: FrameType | None) -> None:
        """The engine refused a backward started inside another one's hook, from user code in ``frame``."""
        if frame is None or torch.is_grad_enabled():
            return
        call = frame_site(frame)
        root = roots[0] if isinstance(roots, (tuple, list)) and roots else roots
        subject = variable_name(frame, root) if isinstance(root, torch.Tensor) else None
        start = last_binding(frame.f_code, subject, call.line) if subject is not None else None
        made = _computed_from_grad(frame, start if start is not None else call.line)
        self._latest = (error, HookRefusal(call, made and Site(call.file, made), subject, frame.f_code.co_name))

    def of(self, error: BaseException) -> HookRefusal | None:
        """The refusal ``error`` carries, if it came from inside a hook."""
        latest = self._latest
        if latest is None or latest[0] is not error:
            return None
        self._latest = None
        return latest[1]


def _computed_from_grad(frame: FrameType, line: int) -> int | None:
    """The first line, from ``line`` back through the names it reads, that reads a value requiring grad."""
    values = {**frame.f_globals, **frame.f_locals}
    seen: set[int] = set()
    lines = [line]
    while lines and len(seen) < _DEPTH:
        current = lines.pop(0)
        if current in seen:
            continue
        seen.add(current)
        names = names_read(frame.f_code, current)
        if any(_requires_grad(values.get(name)) for name in names):
            return current
        lines += [bound for bound in (last_binding(frame.f_code, name, current) for name in names
                                      if isinstance(values.get(name), torch.Tensor)) if bound is not None]
    return None


def _requires_grad(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.requires_grad
    return isinstance(value, nn.Module) and any(p.requires_grad for p in value.parameters())
