"""`numpy`: a value computed from the watched tensor became a NumPy array."""
KIND = "numpy"
SEVERITY = "error"


def describe(detail: str, tensor: str) -> tuple[str, str]:
    return (
        f"{detail} turned a value computed from {tensor} into a NumPy array, outside autograd.",
        "do this step with torch operations on the tensor; convert to NumPy only for logging or plotting.",
    )
