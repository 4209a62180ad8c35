"""`new_parameter`: ``nn.Parameter(...)`` wrapped a computed tensor, making a fresh leaf."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "new_parameter"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    return (
        f"nn.Parameter(...) wrapped a tensor computed from {tensor}: the parameter is a new leaf "
        "and gradients stop at it.",
        "keep the computed tensor as a plain tensor (or pass it through torch.func.functional_call) "
        "instead of wrapping it in nn.Parameter.",
    )
