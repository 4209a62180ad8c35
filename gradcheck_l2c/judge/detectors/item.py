"""`item`: a value computed from the watched tensor became a Python number."""
KIND = "item"
SEVERITY = "error"


def describe(detail: str, tensor: str) -> tuple[str, str]:
    return (
        f"{detail} turned a value computed from {tensor} into a Python number, "
        "which carries no gradient back to it.",
        f"keep it a tensor in the computation (drop {detail}); call {detail} only for logging.",
    )
