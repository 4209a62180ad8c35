"""Learn what the user's frames hold: modules built before the trace, and the variables that name tensors."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from gradcheck_l2c.record.locations import USER, frame_kind
from gradcheck_l2c.record.names import name_variables, resolve_names
from gradcheck_l2c.record.unregistered import UnregisteredLog
from gradcheck_l2c.record.watch import WatchRegistry, owner_of

#: The most items of a list, tuple or dict variable of modules looked through (an ensemble's models).
_ITEMS = 64


def discover(registry: WatchRegistry, unregistered: UnregisteredLog, frame: Any) -> None:
    """Learn modules and variable names from the user frames on the stack (cheap, no copies); then, if anything that
    names tensors changed since the last look (`WatchRegistry.changes`, a watched tensor gone), names every watched
    tensor from the live modules and notes the tensors they hold unregistered (a walk of every module)."""
    while frame is not None:
        if frame_kind(frame.f_code.co_filename) == USER:
            for name, value in frame.f_locals.items():
                if isinstance(value, nn.Module):
                    _learn_module(registry, value, name if name != "self" else None)
                elif type(value) in (list, tuple, dict) and 0 < len(value) <= _ITEMS:
                    items = list(value.items() if type(value) is dict else enumerate(value))
                    # a collection of modules only (an ensemble, a dict of networks: ``models[0]``), not a bag of
                    # results that may hold another thread's model
                    if all(isinstance(item, nn.Module) for _, item in items):
                        for index, item in items:
                            _learn_module(registry, item, f"{name}[{index!r}]")
            name_variables(registry, frame.f_locals)
        frame = frame.f_back
    adopt_attributes(registry)
    if registry.changes == registry.looked_at and not registry.died:
        unregistered.collect_constructed(registry)
        return
    registry.looked_at = registry.changes
    resolve_names(registry)
    unregistered.collect(registry)


def _learn_module(registry: WatchRegistry, module: nn.Module, variable: str | None) -> None:
    """A module a user frame holds, under ``variable``; its parameters watched if they were not yet."""
    if id(module) not in registry.modules:
        for pname, param in module.named_parameters():
            registry.watch_leaf(param, None, owner=(module, pname))
    registry.add_module(module, variable)


def adopt_attributes(registry: WatchRegistry) -> None:
    """Name watched non-parameter tensors after the module attribute that holds them."""
    for module, _ in registry.live_modules():
        for attr, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("_"):
                watched = registry.get(value)
                if watched is not None and watched.owner is None:
                    watched.owner = owner_of(module, attr)
                    registry.changes += 1
