"""`grad_no_graph`: ``torch.autograd.grad`` without ``create_graph=True`` returned gradients as constants, so a
loss built from them (a gradient penalty, a derivative-matching term, a second-order update) trains nothing."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "grad_no_graph"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    return (
        f"{event.detail} without create_graph=True returned gradients that depend on {tensor} as constants: "
        f"whatever is computed from them carries no gradient back to {tensor}.",
        "pass create_graph=True to torch.autograd.grad so that the gradients are themselves differentiable "
        "(as gradient penalties and second-order updates need).",
    )
