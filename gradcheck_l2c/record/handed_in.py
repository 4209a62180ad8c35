"""A user's helper that only converts what it is given (``def as_tensor(data): return torch.as_tensor(data)``, a
backend's shim): values with history rebuilt inside it are named where they were handed to it, the line that chose to
convert them, while the helper stays right for the numbers and arrays it is meant for. A function that does more with
them (rewraps an argument, then computes with the copy) is where the fix goes, and is named itself."""
from __future__ import annotations

import dis
from types import FrameType
from typing import Any

import torch

from gradcheck_l2c.record.locations import USER, Site, frame_kind, frame_site, user_frame, user_site


def handed_in_site(data: Any, depth: int = 1) -> Site | None:
    """The user's line that handed ``data`` (tensors) to the function building a tensor from it, when that function is
    a helper of the user's that got ``data`` as an argument, unchanged; else the innermost user line."""
    if not (isinstance(data, torch.Tensor) or type(data) in (list, tuple) and any(isinstance(item, torch.Tensor)
                                                                                 for item in data)):
        return user_site(depth + 1)
    frame = user_frame(depth + 1)
    caller = frame.f_back if frame is not None else None
    if caller is None or frame.f_code.co_name.startswith("<") or frame_kind(caller.f_code.co_filename) != USER:
        return user_site(depth + 1)
    code = frame.f_code
    arguments = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    local = frame.f_locals
    if _returns_the_call(frame) and any(local.get(name) is data for name in arguments):
        return frame_site(caller)
    return user_site(depth + 1)


_CACHE, _RETURN = dis.opmap.get("CACHE"), dis.opmap["RETURN_VALUE"]


def _returns_the_call(frame: FrameType) -> bool:
    """Whether ``frame`` returns what the call it is making returns, as it is (the instruction after that call)."""
    code, at = frame.f_code.co_code, frame.f_lasti + 2
    while at < len(code) and code[at] == _CACHE:
        at += 2
    return at < len(code) and code[at] == _RETURN
