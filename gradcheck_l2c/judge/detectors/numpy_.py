"""`numpy`: a value computed from the watched tensor became a NumPy array."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "numpy"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    detail = event.detail
    return (
        f"{detail} turned a value computed from {tensor} into a NumPy array, outside autograd.",
        "do this step with torch operations on the tensor; convert to NumPy only for logging or plotting.",
    )
