"""`tensor_rewrap`: ``torch.tensor(...)`` built a fresh tensor from values with history.

The recorder notes what the call was given (tensors in a list, one tensor, Python numbers, an array)
and whether it asked for ``requires_grad=True``; the message and fix follow those facts."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "tensor_rewrap"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    detail, extra = event.detail, event.extra
    leaf = "; requires_grad=True on it starts a new leaf, it does not reconnect the graph" \
        if extra.get("requires_grad", True) else ""
    if detail == "Variable()":
        return (
            f"Variable(...) made a new tensor from values computed from {tensor}{leaf}.",
            "use the tensor itself: Variable is a no-op since PyTorch 0.4, and Variable(x.data) drops x's history.",
        )
    return (f"{detail} copied values computed from {tensor} into a new tensor without history{leaf}.",
            _fix(detail, extra.get("given"), extra.get("came_from")))


def _fix(detail: str, given: str | None, came_from: tuple | None) -> str:
    if given == "tensors":
        return f"combine the tensors with torch.stack / torch.cat instead of {detail}: those keep their history."
    if given == "tensor":
        return f"use the tensor itself instead of {detail}, which copies it without history (x.clone() keeps it)."
    cut = f"{came_from[0]} at {came_from[1]}" if came_from and came_from[1] is not None else "an earlier cut"
    if given == "number":
        return (f"use the tensor the number came from instead of rebuilding one from it here; {cut} "
                "made the number and is reported separately.")
    if given == "numbers":
        return (f"keep the values as tensors and combine them with torch.stack / torch.cat instead of rebuilding "
                f"one from numbers here; {cut} made the numbers and is reported separately.")
    if given == "array":
        return (f"use the tensor the array came from (with any NumPy steps in between done by torch operations) "
                f"instead of converting back with {detail}; {cut} made the array and is reported separately.")
    return f"use the tensors themselves (torch.stack / torch.cat to combine them) instead of {detail}."
