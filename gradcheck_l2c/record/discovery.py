"""Learn what the user's frames hold: modules built before the trace, and the variables that name tensors."""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from gradcheck_l2c.record.locations import USER, frame_kind
from gradcheck_l2c.record.names import name_variables, resolve_names
from gradcheck_l2c.record.unregistered import UnregisteredLog
from gradcheck_l2c.record.watch import WatchRegistry, owner_of


def discover(registry: WatchRegistry, unregistered: UnregisteredLog, frame: Any) -> None:
    """Learn modules and variable names from the user frames on the stack (cheap, no copies); then, if anything that
    names tensors changed since the last look (`WatchRegistry.changes`, a watched tensor gone), names every watched
    tensor from the live modules and notes the tensors they hold unregistered (a walk of every module)."""
    while frame is not None:
        if frame_kind(frame.f_code.co_filename) == USER:
            for name, value in frame.f_locals.items():
                if isinstance(value, nn.Module):
                    if id(value) not in registry.modules:
                        for pname, param in value.named_parameters():
                            registry.watch_leaf(param, None, owner=(value, pname))
                    registry.add_module(value, name if name != "self" else None)
            name_variables(registry, frame.f_locals)
        frame = frame.f_back
    adopt_attributes(registry)
    if registry.changes == registry.looked_at and not registry.died:
        unregistered.collect_constructed(registry)
        return
    registry.looked_at = registry.changes
    resolve_names(registry)
    unregistered.collect(registry)


def adopt_attributes(registry: WatchRegistry) -> None:
    """Name watched non-parameter tensors after the module attribute that holds them."""
    for module, _ in registry.live_modules():
        for attr, value in vars(module).items():
            if isinstance(value, torch.Tensor) and not attr.startswith("_"):
                watched = registry.get(value)
                if watched is not None and watched.owner is None:
                    watched.owner = owner_of(module, attr)
                    registry.changes += 1
