"""`item`: a value computed from the watched tensor became a Python number."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "item"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    detail = event.detail
    return (
        f"{detail} turned a value computed from {tensor} into a Python number, "
        "which carries no gradient back to it.",
        f"keep it a tensor in the computation (drop {detail}); call {detail} only for logging.",
    )
