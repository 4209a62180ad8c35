"""In-place writes in grad mode (also those of layers built to write in place, ``nn.ReLU(inplace=True)``), and
``state_dict()`` entries that share storage with live parameters."""
from __future__ import annotations

import weakref
from collections import deque
from types import FrameType
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from gradcheck_l2c.record.args import flat, op_label
from gradcheck_l2c.record.entries import entry_ref
from gradcheck_l2c.record.events import EventLog
from gradcheck_l2c.record.locations import USER, Site, frame_kind, user_site
from gradcheck_l2c.record.reach import Reachability
from gradcheck_l2c.record.torch_internals import MODULE_CALLS, version
from gradcheck_l2c.record.watch import WatchRegistry


class InplaceWrite(NamedTuple):
    """One in-place write in grad mode: where, which op, and the written tensor's shape and version after it
    (autograd's in-place error names a shape and a version: this finds the write)."""

    site: Site | None
    op: str
    shape: tuple[int, ...]
    version: int
    before: int = 0  # the id of the autograd node the tensor came from before the write (0: none)


@dataclass
class InplaceNote:
    """In-place writes at one place into tensors computed from watched leaves: autograd records them, so they
    cut nothing; kept to tell the tensors whose gradient goes missing anyway."""

    keys: frozenset[int]  # the watched leaves the first write's target reached
    count: int = 1


@dataclass
class Snapshot:
    """A ``state_dict()`` entry that shares storage with a live parameter."""

    key: int
    site: Site | None
    version: int


class WriteLog:
    """The latest in-place writes, the notes per place, and the live ``state_dict()`` snapshots."""

    def __init__(self, registry: WatchRegistry, reach: Reachability, events: EventLog) -> None:
        self.registry, self.reach, self.events = registry, reach, events
        self.recent: deque[InplaceWrite] = deque(maxlen=256)
        self.notes: dict[tuple[Site | None, str], InplaceNote] = {}
        self.snapshots: dict[int, tuple[weakref.ref, Snapshot]] = {}
        self.inplace_layers: dict[int, tuple[weakref.ref, Site | None]] = {}  # module id -> where made to write in place
        self.dim_layers: dict[int, tuple[weakref.ref, Site | None]] = {}  # module id -> where given its dim

    def layer_made_inplace(self, module: Any, site: Site | None) -> None:
        """A module's ``inplace`` was set true (by its constructor, ``nn.ReLU(inplace=True)`` on the user's line,
        or by user code, ``m.inplace = True``): the line to change when its writes break a backward."""
        _remember(self.inplace_layers, module, site)

    def layer_given_dim(self, module: Any, site: Site | None) -> None:
        """A torch layer's ``dim`` was set (``nn.Softmax(dim=1)`` on the user's line): the line to change when
        that dimension turns out to have size 1."""
        _remember(self.dim_layers, module, site)

    def layer_site(self, frame: FrameType | None) -> Site | None:
        """Where the torch layer running at ``frame`` (or further out, short of user code) was given its dim,
        when a torch container (``nn.Sequential``) called it; None when user code called it on its own line
        (``self.softmax(top_logits)``: that call, where the input is chosen, is the line to change)."""
        running = _running_layer(self.dim_layers, frame)
        if running is None:
            return None
        _, layer_frame, site = running
        caller = layer_frame.f_back
        while caller is not None and caller.f_code.co_name in MODULE_CALLS:
            caller = caller.f_back
        called_by_user = caller is not None and frame_kind(caller.f_code.co_filename) == USER
        return None if called_by_user else site

    def inplace_layer_site(self, frame: FrameType | None) -> Site | None:
        """Where the layer writing in place at ``frame`` (or further out, short of user code) was made to, if one is."""
        running = _running_layer(self.inplace_layers, frame)
        return running[2] if running is not None else None

    def layer_wrote(self, target: torch.Tensor, func: Any, frame: FrameType | None) -> None:
        """A functional op called with ``inplace=True`` changed its input (``frame`` is its caller): an in-place
        write, placed where the running layer was made to write in place, else at the user's line. Asked in
        the first iteration only (`Origins.recording`), where a layer's write that breaks backward first does."""
        running = _running_layer(self.inplace_layers, frame)
        if running is not None:
            layer, _, site = running
            self.wrote(target, site, f"{type(layer).__name__}(inplace=True)")
            return
        self.wrote(target, user_site(2), op_label(func))

    def wrote(self, target: torch.Tensor, site: Site | None, label: str) -> None:
        """An in-place write in grad mode. On a tensor with history autograd records it, so it does not cut
        the path: the graph is walked once per place and operation, not once per call."""
        node = target.grad_fn
        inputs = node.next_functions if node is not None else ()
        before = id(inputs[0][0]) if inputs and inputs[0][0] is not None else 0
        self.recent.append(InplaceWrite(site, label, tuple(target.shape), version(target), before))
        if not target.requires_grad:
            return
        note = self.notes.get((site, label))
        if note is None:
            self.notes[(site, label)] = InplaceNote(self.reach(target))
        else:
            note.count += 1

    def wrote_out(self, target: torch.Tensor, label: str) -> None:
        """An op given ``out=`` wrote into ``target`` with gradients off (a power iteration's ``normalize(..., out=u)``
        under no_grad): no in-place handler sees it, and it may make a tensor saved for backward stale."""
        self.recent.append(InplaceWrite(user_site(2), f"{label}(out=...)", tuple(target.shape), version(target)))

    def snapshot(self, param: torch.Tensor, out: torch.Tensor) -> None:
        """``state_dict()`` returned ``out``, a detached alias of the watched ``param``."""
        key = self.registry.key_of(param)
        if key is None:
            return
        ident = id(out)
        snapshots = self.snapshots
        ref = entry_ref(out, snapshots, ident)
        snapshots[ident] = (ref, Snapshot(key, user_site(2), version(out)))

    def check_snapshots(self, func: Any, args: tuple) -> None:
        """A stale ``state_dict()`` entry is used: its parameter changed since the snapshot."""
        snapshots = self.snapshots
        for arg in flat(args):
            entry = snapshots.get(id(arg))
            if entry is None or entry[0]() is not arg:
                continue
            snap = entry[1]
            if version(arg) != snap.version:
                self.events.record("state_dict_alias", snap.key, user_site(2), op_label(func),
                                   snapshot=snap.site)
                snap.version = version(arg)


def _remember(layers: dict[int, tuple[weakref.ref, Site | None]], module: Any, site: Site | None) -> None:
    """Note ``module``'s line in ``layers`` for as long as the module lives."""
    ident = id(module)
    layers[ident] = (entry_ref(module, layers, ident), site)


def _running_layer(layers: dict[int, tuple[weakref.ref, Site | None]],
                   frame: FrameType | None) -> tuple[Any, FrameType, Site | None] | None:
    """The layer of ``layers`` whose method runs at ``frame`` or further out, short of user code: the layer, its
    frame and its noted line."""
    while frame is not None and frame_kind(frame.f_code.co_filename) != USER:
        layer = frame.f_locals.get("self")
        entry = layers.get(id(layer)) if layer is not None else None
        if entry is not None and entry[0]() is layer:
            return layer, frame, entry[1]
        frame = frame.f_back
    return None
