"""The user frames on the stack, each with the line it is at: where a value was made in each function on the way.

Walks end at the frame that runs the traced script (`runs_scripts`): below it lie the tool and its launcher. Each
distinct stack (the same frames at the same lines) is answered with one tuple, made once: the first iteration keeps
one on every node it makes, and a new tuple kept per node would make the collector walk the script's heap more often.
"""
from __future__ import annotations

import sys
from types import CodeType, FrameType
from typing import Any, Callable

from gradcheck_l2c.record.locations import COMPILED_GRAPHS, KINDS, USER, Site, frame_kind, frame_site, user_site

#: One user frame of a stack: its identity while it runs, its code, and the line it was at.
StackEntry = tuple[int, CodeType, Site]
_MAX_STACKS = 4096  # distinct stacks remembered (a script's are few); past them a cache starts over

_floor: CodeType | None = None  # `runs_scripts`
#: The (id(code), instruction) of every user frame of a stack -> (those codes, kept so that their ids stay theirs;
#: the Sites of those frames): a backward called from the same lines at every step finds them here.
_lines: dict[tuple[int, ...], tuple[tuple[CodeType, ...], tuple[Site, ...]]] = {}
#: The same, and the ids of those frames -> `user_stack`'s answer. A frame's id names it while it runs; a later frame
#: of that id, running the same code at the same instruction, has the same answer.
_entries: dict[tuple[int, ...], tuple[StackEntry, ...]] = {}


def runs_scripts(code: CodeType) -> None:
    """Frames of ``code`` run a traced script as ``__main__``: what lies below them is the tool and its launcher (a
    console script's frame, which no path of the script's own lines includes), so walks of user frames end there."""
    global _floor
    _floor = code


def user_stack(depth: int = 1) -> tuple[StackEntry, ...]:
    """Every user frame above the caller, innermost first, with the line each was at (the one in a frame still
    running later is the line to show there)."""
    places: list[int] = []
    frames = _user_frames(sys._getframe(depth + 1), places)
    places += map(id, frames)
    return _cached(_entries, tuple(places),
                   lambda: tuple((id(frame), frame.f_code, frame_site(frame)) for frame in frames))


def user_stack_sites(depth: int = 1) -> tuple[Site | None, tuple[Site, ...]]:
    """The innermost user line above the caller, as `user_site` tells it, and the line of every user frame above
    it, innermost first: one walk of the stack for both (a backward reads them at every step)."""
    places: list[int] = []
    frames = _user_frames(sys._getframe(depth + 1), places)
    sites = _cached(_lines, tuple(places),
                    lambda: (tuple(frame.f_code for frame in frames), tuple(map(frame_site, frames))))[1]
    if COMPILED_GRAPHS or not sites:
        return user_site(depth + 1), sites
    return sites[0], sites


def _user_frames(frame: FrameType | None, places: list[int]) -> list[FrameType]:
    """The user frames from ``frame`` outwards, innermost first (one walk of the stack); ``places`` gets each one's
    code id and instruction."""
    found = []
    kinds, floor = KINDS, _floor
    while frame is not None:
        code = frame.f_code
        if code is floor:
            break
        filename = code.co_filename
        kind = kinds.get(filename)
        if (kind if kind is not None else frame_kind(filename)) == USER:
            found.append(frame)
            places += (id(code), frame.f_lasti)
        frame = frame.f_back
    return found


def _cached(cache: dict[tuple[int, ...], Any], key: tuple[int, ...], make: Callable[[], Any]) -> Any:
    """``cache[key]``, made now if missing."""
    entry = cache.get(key)
    if entry is None:
        if len(cache) >= _MAX_STACKS:
            cache.clear()
        entry = cache[key] = make()
    return entry
