"""`no_grad`: computation on the path ran with gradients disabled."""
KIND = "no_grad"
SEVERITY = "error"


def describe(detail: str, tensor: str) -> tuple[str, str]:
    return (
        f"`{detail}` ran with gradients disabled (torch.no_grad / inference_mode / set_grad_enabled(False)) "
        f"on values computed from {tensor}, so its result has no history.",
        "move this computation out of the no_grad block; to update a leaf in place under no_grad, "
        "use `w -= lr * w.grad` (in place), not `w = w - lr * w.grad`.",
    )
