"""`state_dict_reload`: values were copied into parameters under no_grad (``load_state_dict``, ``copy_``), or with
gradients on into a tensor that shares a parameter's memory (a tensor of ``state_dict()``)."""
from __future__ import annotations

from gradcheck_l2c.record.facts import INTO_ALIAS, Event

KIND = "state_dict_reload"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    detail = event.detail
    if detail == "load_state_dict()":
        return (
            f"load_state_dict() copied values computed from {tensor} into the model's parameters under no_grad: "
            "the forward pass then sees constants, not a function of it.",
            "evaluate the model at the computed weights with "
            "torch.func.functional_call(model, new_params, (inputs,)) instead of loading them.",
        )
    if detail == INTO_ALIAS:
        return (
            f".copy_() wrote values computed from {tensor} into a tensor that shares a parameter's memory (a tensor "
            "of state_dict(), or a .detach() of the parameter): the parameter's values change, but autograd records "
            "the copy on that other tensor, and the forward that uses the parameter sees constants, not a function "
            f"of {tensor}.",
            "use the computed tensor itself in the module (torch.func.functional_call(model, {name: computed}, "
            "(inputs,)), or `del module.weight` then `module.weight = computed`) instead of copying it into the "
            "state_dict().",
        )
    return (
        f"{detail} copied values computed from {tensor} into a leaf tensor under no_grad: "
        "what is computed from that leaf later sees constants, not a function of it.",
        f"use the computed tensor itself where it is needed instead of {detail} into the leaf (for module "
        "weights: torch.func.functional_call(model, {name: computed}, (inputs,))).",
    )
