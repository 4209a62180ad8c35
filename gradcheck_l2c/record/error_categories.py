"""The categories of autograd's errors, told by the words of PyTorch's message (its C++ engine raises them as
plain RuntimeErrors): which one a refused backward or a refused op is, and which ones an op raises in forward."""
from __future__ import annotations

import re

from gradcheck_l2c.record.ddp import UNUSED_ERRORS

#: Each category of autograd error and the words of PyTorch's message that tell it, checked in order.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("freed_graph", ("backward through the graph a second time",)),
    ("inplace_saved", ("modified by an inplace operation",)),
    ("inplace_leaf", ("leaf Variable that requires grad is being used in an in-place operation",)),
    ("inference_saved", ("Inference tensors cannot be saved for backward",)),
    ("non_scalar_root", ("grad can be implicitly created only for",)),
    ("unused_input", ("appears to not have been used in the graph",)),
    ("input_no_grad", ("One of the differentiated Tensors does not require grad",)),
    ("function_backward", ("returned an incorrect number of gradients", "returned an invalid gradient at index",
                           "but the corresponding forward input was not a Variable")),
    ("function_no_backward", ("You must implement either the backward or vjp method",)),
    ("no_derivative", ("is not implemented",)),  # "derivative for aten::X is not implemented": an op autograd lacks
    ("deepcopy_non_leaf", ("support the deepcopy protocol",)),
    ("numpy_requires_grad", ("Can't call numpy() on Tensor that requires grad",)),
    ("hook_no_grad", ("cannot register a hook on a tensor that doesn't require gradient",)),
    ("hook_result", ("has changed the size of value", "has changed the type of value",
                     "has returned an incorrect number of values")),
    ("retain_grad_no_grad", ("can't retain_grad on Tensor that has requires_grad=False",)),
    ("graphless", ("does not require grad and does not have a grad_fn",)),
    ("once_differentiable", ("differentiate twice a function that was marked with @once_differentiable",)),
    ("requires_grad_non_leaf", ("you can only change requires_grad flags of leaf variables",)),
    ("inplace_multi_view", ("output of a function that returns multiple views",)),
    ("gradient_shape", ("Mismatch in shape: grad_output",)),
    ("out_requires_grad", ("arguments don't support automatic differentiation, but one of the arguments requires grad",)),
    ("resize_requires_grad", ("cannot resize variables that require grad",)),
    ("dtype_requires_grad", ("Only Tensors of floating point and complex dtype can require gradients",  # factories
                             "only Tensors of floating point dtype can require gradients")),  # requires_grad_()
    ("inplace_nograd_view", ("mode and is being modified inplace with grad mode enabled",)),
    ("inplace_function_view", ("This view was created inside a custom Function",)),
    ("detach_view", ("Can't detach views in-place",)),
    ("legacy_function", ("Legacy autograd function with non-static forward method",)),
    ("ddp", UNUSED_ERRORS),
)
#: The categories an op raises in forward (the others come from a backward or autograd.grad).
IN_FORWARD = frozenset({"inplace_leaf", "inference_saved", "deepcopy_non_leaf", "numpy_requires_grad", "hook_no_grad",
                        "retain_grad_no_grad",
                        "requires_grad_non_leaf", "inplace_multi_view", "out_requires_grad", "resize_requires_grad",
                        "dtype_requires_grad", "inplace_nograd_view", "inplace_function_view", "detach_view",
                        "legacy_function"})
_VIEW_OF = re.compile(r"Output (\d+) of (\w+) is a view")


def classify(text: str) -> str:
    """The category of an autograd error message; ``other`` for one this table does not know."""
    for category, words in CATEGORIES:
        if any(word in text for word in words):
            return category
    return "other"


def multiple_views(text: str) -> dict[str, object]:
    """For a write into one of several views an op returned: which output, and the node autograd names for the op
    that made it (``Unbind``, ``Split``, or a view taken of one of them)."""
    match = _VIEW_OF.search(text)
    if not match:
        return {}
    # used after the tensor they were taken from changed in place (an optimizer's step), not written into itself
    return {"output": int(match[1]), "made_by": match[2], "base_changed": "its base or another view" in text}
