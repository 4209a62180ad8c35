"""The library functions a user line called into, around user code they run in turn: where a library may have
turned gradients off for the user's own modules (``Distribution.sample`` running a flow's transforms under
``no_grad``, a pipeline's ``__call__`` running the user's network)."""
from __future__ import annotations

import os
import sys
from types import FrameType
from typing import NamedTuple

from gradcheck_l2c.record.locations import LIBRARY, USER, Site, frame_kind

_MOST = 32  # library frames kept at most: a deep framework stack is looked at from the inside out


class LibraryCall(NamedTuple):
    """A library frame (its running line and function) and the user line whose call led into it."""

    inside: Site
    function: str
    caller: Site


def library_calls(depth: int = 1) -> tuple[LibraryCall, ...]:
    """The library frames between the innermost user frame above the caller and the user frames further out,
    innermost first, each with the user line outside it that called into the library."""
    frame: FrameType | None = sys._getframe(depth + 1)
    seen_user = False
    pending: list[tuple[Site, str]] = []
    found: list[LibraryCall] = []
    while frame is not None and len(found) + len(pending) < _MOST:
        code = frame.f_code
        kind = frame_kind(code.co_filename)
        if kind == USER:
            if seen_user and pending:
                caller = Site(os.path.abspath(code.co_filename), frame.f_lineno)
                found.extend(LibraryCall(inside, function, caller) for inside, function in pending)
            pending = []
            seen_user = True
        elif kind == LIBRARY and seen_user and not code.co_filename.startswith("<"):
            pending.append((Site(os.path.abspath(code.co_filename), frame.f_lineno), code.co_qualname))
        frame = frame.f_back
    return tuple(found)


def called_library(depth: int = 1) -> str:
    """The qualified name of the library function the innermost user line above the caller called, which runs the op
    now (``Normal.sample``); "" when that line runs the op itself."""
    frame: FrameType | None = sys._getframe(depth + 1)
    called = ""
    while frame is not None:
        kind = frame_kind(frame.f_code.co_filename)
        if kind == USER:
            return called
        if kind == LIBRARY:
            called = frame.f_code.co_qualname
        frame = frame.f_back
    return ""
