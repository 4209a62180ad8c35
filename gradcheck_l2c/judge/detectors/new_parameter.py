"""`new_parameter`: ``nn.Parameter(...)`` wrapped a computed tensor, or a leaf with ``requires_grad=False``, making a
fresh leaf."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "new_parameter"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    if event.detail == "nn.Parameter(requires_grad=False)":  # a frozen copy of the values, not the tensor
        return (
            f"nn.Parameter(..., requires_grad=False) wrapped {tensor}: the parameter shares its values but is a new "
            "leaf that requires no gradient, so gradients stop at it.",
            "keep the tensor itself (an attribute, or register_buffer(name, tensor)) instead of wrapping it in "
            "nn.Parameter(requires_grad=False).",
        )
    return (
        f"nn.Parameter(...) wrapped a tensor computed from {tensor}: the parameter is a new leaf "
        "and gradients stop at it.",
        "keep the computed tensor as a plain tensor (or pass it through torch.func.functional_call) "
        "instead of wrapping it in nn.Parameter.",
    )
