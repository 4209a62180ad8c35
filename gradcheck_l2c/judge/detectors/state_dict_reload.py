"""`state_dict_reload`: values were copied into parameters under no_grad (``load_state_dict``, ``copy_``)."""
KIND = "state_dict_reload"
SEVERITY = "error"


def describe(detail: str, tensor: str) -> tuple[str, str]:
    return (
        f"{detail} copied values computed from {tensor} into the model's parameters under no_grad: "
        "the forward pass then sees constants, not a function of it.",
        "evaluate the model at the computed weights with "
        "torch.func.functional_call(model, new_params, (inputs,)) instead of loading them.",
    )
