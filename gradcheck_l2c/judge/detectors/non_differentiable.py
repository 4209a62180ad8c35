"""`non_differentiable`: the path goes through an op with no or zero derivative.

The fix offers the surrogate that fits the op on the line, from what the run saw it produce: a
piecewise-constant value (round, floor, sign ...), indices (argmax, topk, sort ...), a boolean mask
(a comparison), or an integer cast."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event

KIND = "non_differentiable"

_INDICES = frozenset(("argmax", "argmin", "argsort", "topk", "sort", "max", "min", "kthvalue", "mode", "median",
                      "nanmedian", "cummax", "cummin", "msort", "searchsorted", "bucketize", "nonzero",
                      "multinomial", "unique", "unique_consecutive"))

_COMPARISONS = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "greater": ">", "less": "<", "greater_equal": ">=",
                "less_equal": "<="}
_EQUALITIES = {"eq": "==", "ne": "!=", "not_equal": "!="}


def describe(event: Event, tensor: str) -> tuple[str, str]:
    op = event.detail
    if event.extra.get("test"):
        name = op.strip("_")
        shown = _COMPARISONS.get(name) or _EQUALITIES.get(name) or op
        return (f"`{shown}` turns a value computed from {tensor} into a single bool that the code then tests (an `if`, "
                f"a `bool()`): a test carries no gradient, and the branch it picked computed the loss without "
                f"{tensor}, so no gradient reaches {tensor} through this line.",
                "test something that is not computed from the tensor (whether it was given: `if x is None:`), or, "
                "where the test must stay, compute both branches and pick with torch.where(test, a, b), which keeps "
                "the gradient of the one it picks.")
    if event.extra.get("output") == "constant":
        return (f"`{op}` was taken over a dimension of size 1, so its output is a constant ({op} of one value "
                f"is {'0' if 'log' in op else '1'}) and no gradient reaches {tensor} through it.",
                "take it over the dimension that holds the classes or experts (check dim=), renormalise after "
                "selecting (softmax over all scores, then top-k), or use torch.sigmoid for a single logit.")
    if event.extra.get("output") == "saturated":
        return (f"`{op}` found every value computed from {tensor} beyond its bound, so it passed them no gradient: "
                f"{tensor}'s gradient through it is exactly zero at every step and it never changes.",
                "move the bound below (or above) the values, or start the tensor inside the range; where values "
                "must stay bounded, use a smooth bound (torch.sigmoid, F.softplus) or keep the identity's gradient: "
                "x + (x.clamp(low, high) - x).detach().")
    if event.extra.get("output") == "cancelled":
        return (f"`log_prob` was taken of a sample drawn with `rsample()` (here) from the same distribution: the sample "
                "moves with the distribution's location exactly as the density's centre does, so the two gradients "
                f"to the location cancel and {tensor} gets a gradient of exactly zero.",
                "for a score-function (REINFORCE, policy-gradient) loss, draw the action with `sample()`, which carries "
                "no gradient; keep `rsample()` for a loss that differentiates through the sample itself (SAC's "
                "Q(s, a)).")
    if event.extra.get("output") == "hidden":
        return (f"`{op}` got a value computed from {tensor} inside another argument (a settings tuple, a list, an "
                "object), where autograd does not look: a custom Function tracks only the tensors passed as its "
                f"arguments themselves, so no gradient reaches {tensor} through it.",
                "pass the tensor to apply() as an argument of its own and return its gradient from backward(), or "
                "apply what it does (a transform) with ordinary torch ops before the call.")
    if event.extra.get("output") == "sample":
        return (f"`{op}` draws a random sample whose derivative to its parameters PyTorch defines as zero, "
                f"so no gradient reaches {tensor} through it.", _fix(op, "sample"))
    return (
        f"`{op}` has no useful derivative (its output is constant almost everywhere), "
        f"so no gradient reaches {tensor} through it.",
        _fix(op, event.extra.get("output")),
    )


def _fix(op: str, output: str | None) -> str:
    name = op.strip("_")
    if output == "sample":
        if name == "normal":
            return ("draw the sample by reparameterization so gradients reach the mean and std: "
                    "z = mean + std * torch.randn_like(std) (with torch.distributions, rsample() instead of sample()).")
        return (f"`{op}` draws a sample whose gradient to its parameters is zero: use a relaxed sample "
                "(torch.distributions.RelaxedBernoulli(...).rsample(), F.gumbel_softmax) or a score-function "
                "loss (log_prob(sample) * reward).")
    if output == "step":
        return (f"use a straight-through estimator where {op} must stay in the forward pass: "
                f"y = x + (torch.{name}(x) - x).detach() has {op}'s values and the identity's gradient.")
    if output == "bool":
        symbol = _COMPARISONS.get(name)
        if symbol is None:
            return (f"replace the boolean mask from `{op}` with a soft one (values between 0 and 1 computed with "
                    "torch.sigmoid), and multiply by it instead of indexing with it.")
        flip = "(b - a)" if symbol in ("<", "<=") else "(a - b)"
        return (f"replace the hard comparison a {symbol} b with a soft mask, e.g. torch.sigmoid({flip} / temperature), "
                "and multiply by it instead of indexing with it.")
    if output == "integer" and name in _INDICES:
        return (f"select softly instead of by the indices of `{op}`: weights = torch.softmax(scores / temperature, "
                "dim) (or F.gumbel_softmax(scores, hard=True) for a one-hot that keeps gradients); "
                "the values output of max / topk / sort is differentiable, the indices are not.")
    if output == "integer":
        return (f"keep the values in floating point on this path (`{op}` made integers); where integers are "
                "needed in the forward pass, use y = x + (x.round() - x).detach().")
    return ("compute this step with differentiable torch ops (a soft or straight-through version of "
            f"`{op}`).")
