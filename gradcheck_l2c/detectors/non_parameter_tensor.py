"""`non_parameter_tensor`: a module holds a grad-requiring tensor, or Parameters in a plain list/dict,
that is not registered — so ``parameters()``, ``state_dict``, ``.to()`` and optimizers never see it.

Modules are looked at while they are alive (at the first backward calls and at the end of the trace).
"""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c import graph
from gradcheck_l2c.records import Finding

KIND = "non_parameter_tensor"


def collect(state) -> None:
    """Remember every unregistered grad-requiring attribute of the live modules, with its creation site."""
    from gradcheck_l2c.judge import module_site

    registry = state.registry
    for module, _ in registry.live_modules():
        owner = type(module).__name__
        for attr, value in vars(module).items():
            if attr.startswith("_") or (owner, attr) in state.unregistered:
                continue
            problem = _problem(value)
            if problem is not None:
                site = _creation_site(registry, value) or module_site(module)
                state.unregistered[(owner, attr)] = (site, problem)


def scan(run) -> list[Finding]:
    collect(run.state)
    found = []
    for (owner, attr), (site, problem) in run.state.unregistered.items():
        name = f"{owner}.{attr}"
        if not run.wants(name, attr):
            continue
        if problem == "tensor":
            message = (f"{name} is a tensor with requires_grad=True but not an nn.Parameter: "
                       "parameters(), state_dict(), .to() and optimizers do not see it.")
            fix = f"register it: self.{attr} = nn.Parameter(...) (or register_buffer if it should not learn)."
        else:
            message = (f"{name} is a plain {problem} of Parameters: they are not registered, "
                       "so parameters(), state_dict(), .to() and optimizers do not see them.")
            fix = f"use nn.ParameterList / nn.ParameterDict for self.{attr}."
        found.append(run.finding(KIND, "warning", name, site, message, fix))
    return found


def _problem(value) -> str | None:
    if isinstance(value, torch.Tensor):
        return "tensor" if value.requires_grad and not isinstance(value, nn.Parameter) else None
    if type(value) in (list, tuple):
        return type(value).__name__ if any(isinstance(v, nn.Parameter) for v in value) else None
    if type(value) is dict:
        return "dict" if any(isinstance(v, nn.Parameter) for v in value.values()) else None
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
        created = registry.created.get(id(tensor))
        if created is not None and created[0]() is tensor:
            return created[1]
        if tensor.grad_fn is not None:
            for leaf in graph.leaf_tensors([tensor.grad_fn]):
                watched = registry.get(leaf)
                if watched is not None and watched.site is not None and not watched.is_parameter:
                    return watched.site
    return None
