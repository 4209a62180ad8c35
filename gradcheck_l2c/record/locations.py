"""Find the user's code on the stack: skip this tool, torch and the standard library.

Every location the tool reports goes through here, so findings point at the line the user wrote,
never at ``torch/nn/modules/module.py``.
"""
from __future__ import annotations

import linecache
import os
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any, Callable

import torch
from torch import nn

from gradcheck_l2c.record.torch_internals import FX_GENERATED, MODULE_CALLS, fx_node_trace


def _directory(path: str) -> str:
    return os.path.normcase(os.path.realpath(path)) + os.sep


_OWN_DIR = _directory(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the whole package
_LIBRARY_DIRS = tuple(
    _directory(path)
    for path in (os.path.dirname(torch.__file__), sysconfig.get_paths()["stdlib"], os.path.dirname(os.__file__))
)
#: Installed packages (timm, transformers, Lightning, ...): library code, whose lines are never the one to change.
_INSTALLED = tuple(f"{os.sep}{folder}{os.sep}" for folder in ("site-packages", "dist-packages"))
USER, LIBRARY, OWN = 0, 1, 2
KINDS: dict[str, int] = {}  # file name -> its kind (`frame_kind`): stack walks look here first
_claimed: list[str] = []  # folders of traced scripts that lie among installed packages: user code all the same
#: torch code that moves parameters between processes (DDP's broadcasts, buckets, reducer): its
#: copies and detaches of parameters are no cuts.
_DISTRIBUTED_DIRS = tuple(_directory(os.path.join(os.path.dirname(torch.__file__), *parts))
                          for parts in (("distributed",), ("nn", "parallel")))
_distributed: dict[str, bool] = {}
#: Caches of answers that rest on `frame_kind` (`source_sites.forward_site`), cleared when it changes its mind.
KIND_CACHES: list[Any] = []


def frame_kind(filename: str) -> int:
    """Classify a code file: USER code, a LIBRARY (torch, the standard library), or this tool (OWN)."""
    kind = KINDS.get(filename)
    if kind is None:
        if filename.startswith("<"):
            if filename.startswith(FX_GENERATED) and not COMPILED_GRAPHS:
                COMPILED_GRAPHS.append(True)
            kind = USER if filename.startswith(("<stdin>", "<ipython", "<string>")) else LIBRARY
        else:
            path = os.path.normcase(os.path.realpath(filename))
            if path.startswith(_OWN_DIR):
                kind = OWN
            elif path.startswith(_LIBRARY_DIRS):
                kind = LIBRARY
            elif any(folder in path for folder in _INSTALLED):
                kind = USER if _claimed and path.startswith(tuple(_claimed)) else LIBRARY
            else:
                kind = USER
        KINDS[filename] = kind
    return kind


def claim_user_code(folder: str) -> None:
    """The traced script's folder is user code even where it lies among installed packages (a project whose
    venv sits inside it claims nothing: its installed packages stay library code)."""
    directory = _directory(folder)
    if any(part in directory for part in _INSTALLED) and directory not in _claimed:
        _claimed.append(directory)
        KINDS.clear()
        for cache in KIND_CACHES:
            cache.cache_clear()


@dataclass(frozen=True)
class Site:
    """A line of user code: absolute file and 1-based line; ``column`` (1-based, 0 when unknown) is where
    the running call starts on it. Sites on the same line are equal whatever their columns."""

    file: str
    line: int
    column: int = field(default=0, compare=False)

    @property
    def code(self) -> str:
        return linecache.getline(self.file, self.line).strip()

    @property
    def text_column(self) -> int | None:
        """``column`` counted in characters, as editors count (Python counts UTF-8 bytes); None if unknown."""
        if not self.column:
            return None
        prefix = linecache.getline(self.file, self.line).encode("utf-8")[:self.column - 1]
        return len(prefix.decode("utf-8", "replace")) + 1

    def __str__(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"


def user_frame(depth: int = 1) -> FrameType | None:
    """The innermost frame of user code above the caller (``depth`` frames up)."""
    frame: FrameType | None = sys._getframe(depth + 1)
    kinds = KINDS
    while frame is not None:
        filename = frame.f_code.co_filename
        kind = kinds.get(filename)
        if kind is None:
            kind = frame_kind(filename)
        if kind == USER:
            return frame
        frame = frame.f_back
    return None


_absolute: dict[str, str] = {}


def user_site(depth: int = 1) -> Site | None:
    """The file and line of the innermost user frame above the caller; inside a graph torch.compile made
    (the fx code it runs), the user's line the running graph node was traced from."""
    frame = user_frame(depth + 1)
    if frame is None:
        return None
    if COMPILED_GRAPHS:
        compiled = _compiled_site(sys._getframe(depth + 1), frame)
        if compiled is not None:
            return compiled
    return frame_site(frame)


#: (id(code), instruction) -> (code, its Site). The instruction tells the line: ``f_lineno`` decodes the code's
#: line table at each read, a cost that grows with the length of the function.
_sites: dict[tuple[int, int], tuple[CodeType, Site]] = {}


def frame_site(frame: FrameType) -> Site:
    """The Site of the instruction ``frame`` runs now, made once per instruction (by code id: codes hash slowly)."""
    code = frame.f_code
    key = (id(code), frame.f_lasti)
    entry = _sites.get(key)
    if entry is None or entry[0] is not code:
        filename = code.co_filename
        absolute = _absolute.get(filename)
        if absolute is None:
            absolute = _absolute[filename] = filename if filename.startswith("<") else os.path.abspath(filename)
        entry = _sites[key] = (code, Site(absolute, frame.f_lineno, _column(frame)))
    return entry[1]


def asked_at(made: Any, depth: int = 1) -> tuple[FrameType | None, Site | None]:
    """The innermost user frame above the caller, and its line, outside ``made``'s own ``__init__``: where the object
    being built now was asked for (``HybridAdam(unet.parameters())``, not the ``super().__init__(params)`` of the
    user's subclass)."""
    frame = _user_frame_outside(sys._getframe(depth + 1), lambda self: self is made)[0]
    return frame, (None if frame is None else frame_site(frame))


def built_at(depth: int = 1) -> Site | None:
    """The innermost user line above the caller that is not inside a module's ``__init__``: where the
    module (or Parameter) being made now was asked for (``self.policy = Policy()``, not the ``nn.Linear``
    inside ``Policy.__init__``)."""
    return built_by(depth + 1)[0]  # one Site per line, shared by the Parameters a fold makes


def built_by(depth: int = 1) -> tuple[Site | None, nn.Module | None]:
    """`built_at`'s line, and the outermost module of user code whose ``__init__`` runs below it: the module that line
    builds (None when the layer being made is built there directly)."""
    frame, built = _user_frame_outside(sys._getframe(depth + 1), lambda self: isinstance(self, nn.Module))
    return (None if frame is None else frame_site(frame)), built


def _user_frame_outside(frame: FrameType | None, building: Callable[[Any], bool]) -> tuple[FrameType | None, Any]:
    """The first user frame from ``frame`` outwards that is not an ``__init__`` whose ``self`` is ``building``, and the
    outermost such ``self`` passed on the way (None if none)."""
    passed = None
    while frame is not None:
        code = frame.f_code
        if frame_kind(code.co_filename) == USER:
            if code.co_name != "__init__" or not building(made := frame.f_locals.get("self")):
                return frame, passed
            passed = made
        frame = frame.f_back
    return None, passed


COMPILED_GRAPHS: list[bool] = []  # not empty once fx-generated code was seen on a stack (torch.compile)
_TRACE_ENTRY = re.compile(r'File "([^"]+)", line (\d+)')


def _compiled_site(frame: FrameType | None, user: FrameType) -> Site | None:
    """The user line behind the fx graph node running between ``frame`` and the user frame ``user``, if any."""
    while frame is not None and frame is not user:
        if frame.f_code.co_filename.startswith(FX_GENERATED):
            trace = fx_node_trace(frame)
            entries = [(file, int(line)) for file, line in _TRACE_ENTRY.findall(trace or "")
                       if frame_kind(file) == USER]
            return Site(os.path.abspath(entries[-1][0]), entries[-1][1]) if entries else None
        frame = frame.f_back
    return None


_positions: dict[CodeType, list[tuple[int | None, int | None, int | None, int | None]]] = {}


def _column(frame: FrameType) -> int:
    """The 1-based column where the frame's current instruction starts (Python 3.11+), else 0.

    ``co_positions`` lists one position per 2-byte instruction; it is read once per code object."""
    code = frame.f_code
    positions = _positions.get(code)
    if positions is None:
        if not hasattr(code, "co_positions"):
            return 0
        positions = _positions[code] = list(code.co_positions())
    index = frame.f_lasti // 2
    if not 0 <= index < len(positions):
        return 0
    line, _, column, _ = positions[index]
    return column + 1 if column is not None and line == frame.f_lineno else 0


def user_caller_site(depth: int = 1) -> Site | None:
    """The line of the frame ``depth`` levels above the caller if it is user code (what `user_site` tells then);
    else None: `caller_is_user`, then `user_site`, in one look at the stack."""
    frame = sys._getframe(depth + 1)
    filename = frame.f_code.co_filename
    kind = KINDS.get(filename)
    return frame_site(frame) if (kind if kind is not None else frame_kind(filename)) == USER else None


def caller_is_user(depth: int = 1) -> bool:
    """Whether the frame ``depth`` levels above the caller is user code (one dict lookup)."""
    filename = sys._getframe(depth + 1).f_code.co_filename
    kind = KINDS.get(filename)
    return (kind if kind is not None else frame_kind(filename)) == USER


def called_by_user_past_torch(depth: int = 1) -> bool:
    """Whether who called the torch API running now, past this tool and torch, is the user (not a library)."""
    return first_past_torch(sys._getframe(depth + 1)) == USER


def first_past_torch(frame: FrameType | None) -> int | None:
    """The kind (USER, or LIBRARY: an installed library) of the first code from ``frame`` out past torch and this
    tool; None if there is none."""
    while frame is not None:
        filename = frame.f_code.co_filename
        kind = KINDS.get(filename)
        if kind is None:
            kind = frame_kind(filename)
        if kind == USER:
            return USER
        if kind == LIBRARY and not os.path.normcase(os.path.realpath(filename)).startswith(_LIBRARY_DIRS[0]):  # torch
            return LIBRARY
        frame = frame.f_back
    return None


def library_callers(depth: int = 1) -> tuple[str, ...]:
    """Names of the torch functions between the caller and user code, innermost first.

    Tells, say, a ``copy_`` made by ``load_state_dict`` from one the user wrote.
    """
    frame: FrameType | None = sys._getframe(depth + 1)
    names = []
    kinds = KINDS
    while frame is not None:
        code = frame.f_code
        kind = kinds.get(code.co_filename)
        if kind is None:
            kind = frame_kind(code.co_filename)
        if kind == USER:
            break
        if kind == LIBRARY:
            names.append(code.co_name)
        frame = frame.f_back
    return tuple(names)


#: Library code whose internal detaches and no_grad writes are no cuts: initialisers fill parameters,
#: differentiation APIs (``autograd.functional``, ``gradcheck``) differentiate a detached copy of the
#: user's tensor, optimizers update leaves in place.
INITIALISERS = (f"{os.sep}torch{os.sep}nn{os.sep}init.py",)
DIFFERENTIATORS = (f"{os.sep}torch{os.sep}autograd{os.sep}functional.py",
                   f"{os.sep}torch{os.sep}autograd{os.sep}gradcheck.py")
OPTIMIZERS = (f"{os.sep}torch{os.sep}optim{os.sep}",)


def called_from(files: tuple[str, ...], depth: int = 1) -> bool:
    """Whether library code from one of ``files`` is on the stack between the caller and user code."""
    frame: FrameType | None = sys._getframe(depth + 1)
    kinds = KINDS
    while frame is not None:
        filename = frame.f_code.co_filename
        kind = kinds.get(filename)
        if kind is None:
            kind = frame_kind(filename)
        if kind == USER:
            return False
        if kind == LIBRARY and any(part in filename for part in files):
            return True
        frame = frame.f_back
    return False


def in_distributed(depth: int = 1) -> bool:
    """Whether torch.distributed or torch.nn.parallel code runs between the caller and user code."""
    frame: FrameType | None = sys._getframe(depth + 1)
    while frame is not None:
        filename = frame.f_code.co_filename
        kind = KINDS.get(filename)
        if (kind if kind is not None else frame_kind(filename)) == USER:
            return False
        inside = _distributed.get(filename)
        if inside is None:
            path = os.path.normcase(os.path.realpath(filename))
            inside = _distributed[filename] = path.startswith(_DISTRIBUTED_DIRS)
        if inside:
            return True
        frame = frame.f_back
    return False


def inside_forward(frame, besides: nn.Module | None = None) -> str | None:
    """The class of the module whose forward is running on the stack above ``frame``, if any and not ``besides`` (a
    Parameter a module sets on itself in its own forward is no module built inside one)."""
    while frame is not None:
        if frame.f_code.co_name in MODULE_CALLS:
            module = frame.f_locals.get("self")
            if isinstance(module, nn.Module):
                return None if module is besides else type(module).__name__
        frame = frame.f_back
    return None
