"""`tensor_rewrap`: ``torch.tensor(...)`` built a fresh tensor from values with history."""
KIND = "tensor_rewrap"
SEVERITY = "error"


def describe(detail: str, tensor: str) -> tuple[str, str]:
    if detail == "Variable()":
        return (
            f"Variable(...) made a new tensor from values computed from {tensor}; requires_grad=True on it "
            "starts a new leaf, it does not reconnect the graph.",
            "use the tensor itself: Variable is a no-op since PyTorch 0.4, and Variable(x.data) drops x's history.",
        )
    return (
        f"{detail} copied values computed from {tensor} into a new tensor without history; "
        "requires_grad=True on it starts a new leaf, it does not reconnect the graph.",
        "combine the tensors with torch.stack / torch.cat (or use them directly) instead of torch.tensor(...).",
    )
