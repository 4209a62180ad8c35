"""Grad-requiring tensors, and Parameters in plain lists/dicts, held by live modules without being
registered (results computed from Parameters, like ``self.loss``, are fine): remembered with their
creation site while the modules are alive, for the ``non_parameter_tensor`` detector to judge after
the run."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.locations import module_site


def collect(state) -> None:
    """Remember every unregistered grad-requiring attribute of the live modules, with its creation site."""
    registry = state.registry
    for module, _ in registry.live_modules():
        owner = type(module).__name__
        for attr, value in vars(module).items():
            if attr.startswith("_") or (owner, attr) in state.unregistered:
                continue
            problem = _problem(value)
            if problem is not None:
                site = _creation_site(registry, value) or module_site(module)
                state.unregistered[(owner, attr)] = (site, problem, None)


def _problem(value) -> str | None:
    if isinstance(value, torch.Tensor):
        if not value.requires_grad or isinstance(value, nn.Parameter) or _computed_from_parameters(value):
            return None
        return "tensor"
    if type(value) in (list, tuple):
        return type(value).__name__ if any(isinstance(v, nn.Parameter) for v in value) else None
    if type(value) is dict:
        return "dict" if any(isinstance(v, nn.Parameter) for v in value.values()) else None
    return None


def _computed_from_parameters(tensor: torch.Tensor) -> bool:
    """A result kept on the module (``self.loss``, ``self.cache = h``, a weight computed by a
    reparametrisation): its gradient flows on to the Parameters it was computed from."""
    if tensor.grad_fn is None:
        return False
    return any(isinstance(leaf, nn.Parameter) for leaf in graph.leaf_tensors([tensor.grad_fn]))


def _creation_site(registry, value):
    """Where the tensor (or, for a computed one, the leaf it was computed from) was created."""
    tensors = [value] if isinstance(value, torch.Tensor) else list(value.values() if isinstance(value, dict)
                                                                   else value)
    for tensor in tensors:
        if not isinstance(tensor, torch.Tensor):
            continue
        watched = registry.get(tensor)
        if watched is not None and watched.site is not None:
            return watched.site
        created = registry.created.get(id(tensor))
        if created is not None and created[0]() is tensor:
            return created[1]
        if tensor.grad_fn is not None:
            for leaf in graph.leaf_tensors([tensor.grad_fn]):
                watched = registry.get(leaf)
                if watched is not None and watched.site is not None and not watched.is_parameter:
                    return watched.site
    return None
