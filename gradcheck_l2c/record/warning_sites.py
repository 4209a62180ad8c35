"""Where a warning shown during a trace would point untraced.

A warning names the frame ``stacklevel`` frames out from the code that raised it, or, from C++, the innermost
Python frame. The trace puts frames of its own on the stack (the interceptor's, the engine's stand-in), and
torch's dispatch to a torch-function mode runs the public function a second time: a warning then lands on the
tool's code, or on a torch frame a level short of the user's line. This finds the frame it would name on the
stack without them.
"""
from __future__ import annotations

import sys
from types import FrameType

from gradcheck_l2c.record.locations import LIBRARY, OWN, frame_kind, user_site

#: torch's dispatch to a torch-function mode: this function's frame, and the caller that dispatched (the public
#: function that runs again, under the mode, from the tool's handler), are not on an untraced stack.
_DISPATCH = "handle_torch_function"


def untraced_target(filename: str, lineno: int, depth: int = 1) -> tuple[str, int] | None:
    """The file and line a warning named ``filename:lineno`` would name untraced, when the trace's frames moved
    it; else None. ``depth``: frames between the caller and the warnings machinery that shows the warning."""
    kind = frame_kind(filename)
    if kind == OWN:  # from C++ while the interceptor ran: the innermost Python frame was the tool's
        site = user_site(depth + 1)
        return (site.file, site.line) if site is not None else None
    if kind != LIBRARY:
        return None
    stack = _outward_from_origin(sys._getframe(depth + 1))
    level = next((i for i, frame in enumerate(stack)
                  if frame.f_code.co_filename == filename and frame.f_lineno == lineno), None)
    if level is None or not any(frame_kind(frame.f_code.co_filename) == OWN for frame in stack[:level]):
        return None
    untraced = _without_trace_frames(stack)
    if level >= len(untraced):
        return None
    target = untraced[level]
    return target.f_code.co_filename, target.f_lineno


def _outward_from_origin(frame: FrameType | None) -> list[FrameType]:
    """The frames from the code that raised the warning outward, past the warnings machinery."""
    while frame is not None and frame.f_globals.get("__name__") == "warnings":
        frame = frame.f_back
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


def _without_trace_frames(stack: list[FrameType]) -> list[FrameType]:
    """``stack`` less the tool's frames and torch's dispatch to the mode (its frame and the public function that
    dispatched)."""
    kept: list[FrameType] = []
    skip_caller = False
    for frame in stack:
        code = frame.f_code
        if skip_caller:
            skip_caller = False
            continue
        if frame_kind(code.co_filename) == OWN:
            continue
        if code.co_name == _DISPATCH and frame_kind(code.co_filename) == LIBRARY:
            skip_caller = True
            continue
        kept.append(frame)
    return kept
