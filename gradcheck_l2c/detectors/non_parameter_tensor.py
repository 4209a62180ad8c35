"""`non_parameter_tensor`: a module holds a grad-requiring tensor, or Parameters in a plain list/dict,
that is not registered — so ``parameters()``, ``state_dict``, ``.to()`` and optimizers never see it."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c import graph
from gradcheck_l2c.records import Finding

KIND = "non_parameter_tensor"


def scan(run) -> list[Finding]:
    from gradcheck_l2c.judge import module_site

    registry = run.state.registry
    found = []
    seen: set[tuple[str, str]] = set()
    for module, _ in registry.live_modules():
        owner = type(module).__name__
        for attr, value in vars(module).items():
            if attr.startswith("_") or (owner, attr) in seen:
                continue
            problem = _problem(value)
            if problem is None:
                continue
            seen.add((owner, attr))
            site = _creation_site(registry, value) or module_site(module)
            name = f"{owner}.{attr}"
            if problem == "tensor":
                message = (f"{name} is a tensor with requires_grad=True but not an nn.Parameter: "
                           "parameters(), state_dict(), .to() and optimizers do not see it.")
                fix = f"register it: self.{attr} = nn.Parameter(...) (or register_buffer if it should not learn)."
            else:
                message = (f"{name} is a plain {type(value).__name__} of Parameters: they are not registered, "
                           "so parameters(), state_dict(), .to() and optimizers do not see them.")
                fix = f"use nn.ParameterList / nn.ParameterDict for self.{attr}."
            if not run.wants(name, attr):
                continue
            found.append(run.finding(KIND, "warning", name, site, message, fix))
    return found


def _problem(value) -> str | None:
    if isinstance(value, torch.Tensor):
        return "tensor" if value.requires_grad and not isinstance(value, nn.Parameter) else None
    if type(value) in (list, tuple):
        return "container" if any(isinstance(v, nn.Parameter) for v in value) else None
    if type(value) is dict:
        return "container" if any(isinstance(v, nn.Parameter) for v in value.values()) else None
    return None


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
        site = registry.created.get(id(tensor))
        if site is not None and site[0]() is tensor:
            return site[1]
        if tensor.grad_fn is not None:
            for leaf in graph.leaf_tensors([tensor.grad_fn]):
                watched = registry.get(leaf)
                if watched is not None and watched.site is not None and not watched.is_parameter:
                    return watched.site
    return None
