"""``.grad`` reads that found None where the script names the tensor (``print(model.head.weight.grad)``,
``model[2].weight.grad``): it expected that tensor's gradient. A read through a loop variable (``p.grad`` over
``model.parameters()``: a gradient-norm log, a ``p.grad is not None`` filter, ``params[i].grad``) says nothing about
any one parameter and is not kept.

Kept for the tensors that take no gradient because of the script: watched ones it froze (judged with
``Watched.frozen_at``), and Parameters it made with ``requires_grad=False``, which are never watched. A tensor frozen
inside a module's constructor is part of that model's design (a pruning mask, a fixed table), not of a training
schedule whose freezing loop or name filter caught a layer it should not have.
"""
from __future__ import annotations

from types import FrameType
from typing import NamedTuple

import torch
from torch import nn

from gradcheck_l2c.record.code_lines import named_object
from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.watch import WatchRegistry


class NamedRead(NamedTuple):
    """The first line that found a tensor's ``.grad`` None, reading it as ``name`` (``model.head.weight``)."""

    name: str
    site: Site


class MadeFrozen(NamedTuple):
    """A Parameter user code made with ``requires_grad=False`` at ``made``, whose ``.grad`` the script read."""

    made: Site
    read: NamedRead


class EmptyReads:
    """The named ``.grad`` reads that found None: of watched tensors by key, and of Parameters made frozen."""

    def __init__(self) -> None:
        self.watched: dict[int, NamedRead] = {}
        self.made_frozen: dict[Site, MadeFrozen] = {}  # by the line that made the Parameter
        self.designed: set[int] = set()  # watched keys switched off inside a module's constructor

    def built_frozen(self, key: int | None) -> None:
        """The watched tensor ``key`` was switched off inside a module's ``__init__``: frozen by the model's design."""
        if key is not None:
            self.designed.add(key)

    def read(self, registry: WatchRegistry, tensor: torch.Tensor, key: int | None, frame: FrameType | None,
             site: Site | None) -> None:
        """User code in ``frame``, at ``site``, found ``tensor.grad`` None (``key``: the tensor's, when watched)."""
        if frame is None or site is None or (key is not None and key in self.watched):
            return
        made = None
        if key is None:  # kept only for a Parameter user code made frozen (one frozen before the trace is not)
            created = registry.created.get(id(tensor))
            if created is None or created[0]() is not tensor or created[1] is None or not (
                    isinstance(tensor, nn.Parameter) and tensor.is_leaf and not tensor.requires_grad):
                return
            made = created[1]
        name = named_object(frame.f_code, frame.f_lasti)
        if name is None:
            return  # a loop variable's .grad, or an expression's
        if made is None:
            self.watched[key] = NamedRead(name, site)
        else:
            self.made_frozen.setdefault(made, MadeFrozen(made, NamedRead(name, site)))

    def frozen_made(self) -> list[MadeFrozen]:
        """The Parameters made with ``requires_grad=False`` whose ``.grad`` the script read by name."""
        return list(self.made_frozen.values())
