"""``.grad`` reads that found None where the script names the tensor (``print(model.head.weight.grad)``,
``model[2].weight.grad``): it expected that tensor's gradient. A read through a loop variable (``p.grad`` over
``model.parameters()``: a gradient-norm log, a ``p.grad is not None`` filter, ``params[i].grad``) says nothing about
any one parameter and is not kept.

Kept for the tensors that take no gradient because of the script: watched ones it froze (judged with
``Watched.frozen_at``), and Parameters it made with ``requires_grad=False``, which are never watched. A tensor frozen
inside a module's constructor is part of that model's design (a pruning mask, a fixed table), not of a training
schedule whose freezing loop or name filter caught a layer it should not have.

Kept by their line as well, to explain a crash there (the script dying on the None with a TypeError or AttributeError):
reads through a loop variable of a leaf that does not require grad (a hand-written update or clipping over every
parameter, ``p -= lr * p.grad``, with a frozen mask among them), and any read of a watched tensor no backward had
reached yet (``w.grad.zero_()`` before the first backward, a clipping loop over a layer the loss never uses). Where the
script skipped such a None and died on a size, all reads of the second kind are kept (`EmptyReads.uneven`): gradients
gathered after each of several backwards (one per loss term) differ in length when a tensor is in only some graphs.
"""
from __future__ import annotations

import os
from types import FrameType
from typing import Any, NamedTuple

import torch
from torch import nn

from gradcheck_l2c.record.code_lines import named_object
from gradcheck_l2c.record.locations import Site, user_frame
from gradcheck_l2c.record.watch import WatchRegistry


class NamedRead(NamedTuple):
    """The first line that found a tensor's ``.grad`` None, reading it as ``name`` (``model.head.weight``)."""

    name: str
    site: Site


class MadeFrozen(NamedTuple):
    """A Parameter user code made with ``requires_grad=False`` at ``made``, whose ``.grad`` the script read."""

    made: Site
    read: NamedRead


class NoneRead(NamedTuple):
    """A ``.grad`` read at ``site`` that found None: of a leaf that does not require grad, watched (``key``) or a
    Parameter user code made so at ``made`` (``before`` None); or of a watched tensor no backward had reached yet,
    when ``before`` backwards had ended."""

    site: Site
    key: int | None
    made: Site | None
    before: int | None


_NONE_READS = 64  # lines kept where a .grad read found None (a script has few such lines)


class EmptyReads:
    """The named ``.grad`` reads that found None: of watched tensors by key, and of Parameters made frozen."""

    def __init__(self) -> None:
        self.watched: dict[int, NamedRead] = {}
        self.made_frozen: dict[Site, MadeFrozen] = {}  # by the line that made the Parameter
        self.designed: set[int] = set()  # watched keys switched off inside a module's constructor
        self.none_reads: dict[tuple[str, int], NoneRead] = {}  # by the read's file and line: the latest there
        self.crashed: NoneRead | None = None  # the read at the line where the script died on a None
        # the reads of watched tensors no backward had reached yet, and the error, when the script died on a size
        self.uneven: tuple[list[NoneRead], str] = ([], "")

    def built_frozen(self, key: int | None) -> None:
        """The watched tensor ``key`` was switched off inside a module's ``__init__``: frozen by the model's design."""
        if key is not None:
            self.designed.add(key)

    def read(self, registry: WatchRegistry, tensor: torch.Tensor, key: int | None, frame: FrameType | None,
             site: Site | None) -> None:
        """User code in ``frame``, at ``site``, found ``tensor.grad`` None (``key``: the tensor's, when watched)."""
        if frame is None or site is None or (key is not None and key in self.watched):
            return
        created = registry.created.get(id(tensor)) if key is None else None
        made = created[1] if created is not None and created[0]() is tensor else None
        name = named_object(frame.f_code, frame.f_lasti)
        if name is None:  # a loop variable's .grad, or an expression's: only a crash there tells of one tensor
            if tensor.is_leaf and not tensor.requires_grad:
                self._keep(NoneRead(site, key, made, None))
            return
        if key is None and (made is None or not (isinstance(tensor, nn.Parameter) and tensor.is_leaf
                                                 and not tensor.requires_grad)):
            return  # kept only for a Parameter user code made frozen (one frozen before the trace is not)
        if made is None:
            self.watched[key] = NamedRead(name, site)
        else:
            self.made_frozen.setdefault(made, MadeFrozen(made, NamedRead(name, site)))

    def found_none(self, registry: WatchRegistry, tensor: torch.Tensor, watched: Any, site: Site | None,
                   backwards: int) -> None:
        """User code at ``site``, ``backwards`` backwards into the run, found ``tensor.grad`` None (``watched``: its
        record, when watched): kept if frozen, or if no backward had reached it yet."""
        if watched is None or watched.frozen:
            self.read(registry, tensor, watched and watched.key, user_frame(3), site)
        elif not watched.ever_grad and site is not None:
            self._keep(NoneRead(site, watched.key, None, backwards))

    def _keep(self, read: NoneRead) -> None:
        line = (read.site.file, read.site.line)
        if line in self.none_reads or len(self.none_reads) < _NONE_READS:
            self.none_reads[line] = read

    def raised(self, error: BaseException | None) -> None:
        """The script died with ``error``: a TypeError or AttributeError on None at a line where a kept read found
        ``.grad`` None comes from that read (the innermost such line of the traceback); a RuntimeError on a size may
        come from reads that skipped a None (`uneven`)."""
        if not self.none_reads:
            return
        if isinstance(error, RuntimeError) and "size" in str(error):  # "stack expects each tensor to be equal size"
            self.uneven = [read for read in self.none_reads.values() if read.key is not None and read.before], \
                str(error).splitlines()[0]
        if not isinstance(error, (TypeError, AttributeError)) or "NoneType" not in str(error):
            return
        entry = error.__traceback__
        while entry is not None:
            read = self.none_reads.get((os.path.abspath(entry.tb_frame.f_code.co_filename), entry.tb_lineno))
            self.crashed = read or self.crashed
            entry = entry.tb_next

    def frozen_made(self) -> list[MadeFrozen]:
        """The Parameters made with ``requires_grad=False`` whose ``.grad`` the script read by name."""
        return list(self.made_frozen.values())
