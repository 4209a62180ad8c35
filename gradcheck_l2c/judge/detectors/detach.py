"""`detach`: ``.detach()`` (or ``state_dict()`` or a sparse tensor's ``._values()``, which detach) on the path."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "detach"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    detail = event.detail
    if detail == "state_dict()":
        return (
            f"state_dict() returns detached tensors: the values of {tensor} taken here carry no gradient.",
            "pass the tensors themselves (dict(model.named_parameters()) or torch.func.functional_call) "
            "where a gradient must flow.",
        )
    if detail == "._values()":
        return (
            f"._values() returns a sparse tensor's values detached: those computed from {tensor} taken here carry "
            "no gradient.",
            "take them with .coalesce().values(), which keeps the graph, or compute with the sparse tensor itself "
            "(torch.sparse.mm).",
        )
    return (
        f"{detail} cut a value computed from {tensor} off the autograd graph.",
        f"remove {detail} on this path (keep it only for values used for logging or metrics).",
    )
