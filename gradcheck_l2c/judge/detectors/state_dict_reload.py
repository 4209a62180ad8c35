"""`state_dict_reload`: values were copied into parameters under no_grad (``load_state_dict``, ``copy_``)."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

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
    return (
        f"{detail} copied values computed from {tensor} into a leaf tensor under no_grad: "
        "what is computed from that leaf later sees constants, not a function of it.",
        f"use the computed tensor itself where it is needed instead of {detail} into the leaf (for module "
        "weights: torch.func.functional_call(model, {name: computed}, (inputs,))).",
    )
