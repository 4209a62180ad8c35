"""`non_differentiable`: the path goes through an op with no or zero derivative."""
KIND = "non_differentiable"
SEVERITY = "error"


def describe(detail: str, tensor: str) -> tuple[str, str]:
    return (
        f"`{detail}` has no useful derivative (its output is constant almost everywhere), "
        f"so no gradient reaches {tensor} through it.",
        "use a differentiable surrogate: softmax instead of argmax/topk indices, a straight-through "
        "estimator (x + (round(x) - x).detach()) for rounding, a sigmoid instead of a comparison.",
    )
