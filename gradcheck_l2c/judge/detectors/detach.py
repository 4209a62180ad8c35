"""`detach`: ``.detach()`` (or ``state_dict()``, which detaches) on the path."""
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
    return (
        f"{detail} cut a value computed from {tensor} off the autograd graph.",
        f"remove {detail} on this path (keep it only for values used for logging or metrics).",
    )
