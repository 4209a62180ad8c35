"""`data_attr`: ``.data`` read on the path, or ``x.data = ...``."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "data_attr"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    detail = event.detail
    if detail.startswith(".data ="):
        return (
            f"`.data = ...` replaced a tensor's values with ones computed from {tensor}, behind autograd's back.",
            "compute with the tensors directly (torch.func.functional_call for module weights) "
            "instead of assigning .data.",
        )
    return (
        f".data gave a view of {tensor}'s values that autograd does not track.",
        "use the tensor itself (or .detach() where you really mean to stop the gradient).",
    )
