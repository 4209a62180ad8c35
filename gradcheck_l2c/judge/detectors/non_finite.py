"""`non_finite` (``--nan``): the first NaN of the run, at the line of the op that made it from finite values.

The record says where each non-finite value was born and what the op's inputs were there; this words the
cause (log of 0, 0/0, sqrt at 0 in backward, the masked branch of ``torch.where``, overflow) and the fix
that fits it. The birth that led to the first NaN is an error; Infs that never turned into NaN are warnings.
"""
from __future__ import annotations

from gradcheck_l2c.record.facts import NonFinite
from gradcheck_l2c.records import Finding

KIND = "non_finite"

_FAMILIES = {
    "log": ("log", "log2", "log10", "log1p", "log_", "xlogy"),
    "sqrt": ("sqrt", "sqrt_"),
    "rsqrt": ("rsqrt",),
    "pow": ("pow", "__pow__", "__rpow__", "pow_", "float_power"),
    "div": ("div", "__truediv__", "__rtruediv__", "true_divide", "div_", "__itruediv__", "reciprocal"),
    "acos": ("acos", "asin", "arccos", "arcsin"),
    "atanh": ("atanh", "acosh", "logit", "erfinv"),
    "norm": ("norm", "linalg_vector_norm", "vector_norm", "cdist", "dist", "pdist", "pairwise_distance"),
    "std": ("std", "var", "std_mean", "var_mean"),
    "exp": ("exp", "exp2", "expm1", "exp_", "cosh", "sinh", "softplus"),
    "fill": ("masked_fill", "masked_fill_", "where", "fill_", "full", "full_like", "index_fill"),
}
_FAMILY = {name: family for family, names in _FAMILIES.items() for name in names}
_LARGEST = {"float16": "65504", "bfloat16": "3.4e38", "float32": "3.4e38", "float64": "1.8e308"}
_EPS_INPUT = {
    "log": "clamp the input: torch.log(x.clamp_min(1e-12)) (for the log of a probability, use log_softmax, "
           "F.logsigmoid or F.cross_entropy on the logits)",
    "sqrt": "add eps inside the root: torch.sqrt(x + 1e-12) (for a distance, (diff.pow(2).sum(-1) + 1e-12).sqrt())",
    "rsqrt": "add eps inside the root: torch.rsqrt(x + 1e-12)",
    "pow": "keep the base away from 0 and negatives: x.clamp_min(1e-12).pow(p)",
    "div": "keep the denominator away from 0: a / (b + 1e-8) or a / b.clamp_min(1e-8) (for a standard "
           "deviation: x.std() + 1e-8)",
    "acos": "clamp the input inside the domain: torch.acos(x.clamp(-1 + 1e-7, 1 - 1e-7))",
    "atanh": "clamp the input inside the domain: x.clamp(-1 + 1e-6, 1 - 1e-6)",
    "norm": "use F.normalize(x, eps=1e-12), or (x.pow(2).sum(-1) + 1e-12).sqrt() instead of the norm",
    "std": "add eps: (x.var() + 1e-8).sqrt() instead of x.std(), and take statistics over more than one value",
    "exp": "use a stable form: torch.logsumexp, F.softmax / F.log_softmax (they subtract the max), or clamp "
           "the input before exp",
}


def scan(run) -> list[Finding]:
    births = run.record.non_finite
    if not births:
        return []
    cause = next((b for b in births if b.is_nan or b.nan_seen), None)
    found = []
    for birth in births:
        if birth is not cause and cause is not None and birth.site == cause.site:
            continue  # the same line's forward Inf, whose backward made the NaN
        if birth is not cause and _FAMILY.get(birth.op) == "fill":
            continue  # an -inf written on purpose (attention masks) matters only once it makes a NaN
        message, fix = describe(birth)
        severity = "error" if birth is cause else "warning"
        if birth is cause and not birth.is_nan:
            message += " It turned into NaN later" + (f" (at {birth.became_nan})." if birth.became_nan else ".")
        related = {"symptom": birth.became_nan} if birth.became_nan is not None else None
        found.append(run.finding(KIND, severity, _subject(birth), birth.site, message, fix, birth.count,
                                 related=related))
    return found


def _subject(birth: NonFinite) -> str:
    if birth.phase == "gradient":
        return f"{birth.tensor}.grad"
    return f"{birth.op} ({birth.phase})"


def _value(birth: NonFinite) -> str:
    return {"nan": "NaN", "inf": "inf", "-inf": "-inf"}[birth.value]


def _at(birth: NonFinite) -> str:
    return f" at index {birth.index}" if birth.index else ""


def _num(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:g}"


def describe(birth: NonFinite) -> tuple[str, str]:
    """The sentence and the fix for one birth, worded from its facts."""
    when = f" in iteration {birth.iteration}"
    if birth.phase == "data":
        return (f"{_value(birth)} came in from the data: "
                f"input {(birth.position or 0) + 1} of {birth.op} (a tensor {birth.tensor}) already held it"
                f"{_at(birth)}{when}, and no op the trace saw made it.",
                "check the data where it is loaded (assert torch.isfinite(x).all()) and drop or replace the bad "
                "values (torch.nan_to_num) before they reach the model.")
    if birth.phase == "gradient":
        return (f"the gradient of {birth.tensor} became {_value(birth)}{_at(birth)} in the backward{when}, "
                "while every forward value was finite; the op whose backward made it is none of those --nan "
                f"hooks ({birth.dtype}).",
                "look for a custom autograd.Function's backward or a float16 overflow (use a GradScaler), or run "
                "that step once under torch.autograd.set_detect_anomaly(True) to name the op.")
    family = _FAMILY.get(birth.op, "")
    if birth.phase == "backward":
        return _backward(birth, family, when)
    return _forward(birth, family, when)


def _forward(birth: NonFinite, family: str, when: str) -> tuple[str, str]:
    value, operands = _value(birth), birth.operands
    first = operands[0] if operands else None
    made = f"{birth.op} made {value}{_at(birth)}{when}"
    if family == "div" and len(operands) >= 2 and operands[1] == 0:
        what = "0/0" if operands[0] == 0 else f"{_num(operands[0])}/0"
        return f"{made}: {what}, a division by zero.", _EPS_INPUT["div"] + "."
    if family == "div" and birth.op == "reciprocal" and first == 0:
        return f"{made}: the reciprocal of 0.", _EPS_INPUT["div"] + "."
    if family == "fill":
        filled = next((o for o in operands if o is not None and o != o or o in (float("inf"), float("-inf"))), None)
        return (f"{made}: it wrote {_num(filled) if filled is not None else value} into the tensor (a mask "
                "filled with -inf makes NaN in softmax once a whole row is masked).",
                "fill with a large finite value (torch.finfo(x.dtype).min) instead of -inf, or make sure no row is "
                "masked entirely.")
    if family in ("log", "sqrt", "rsqrt", "pow", "acos", "atanh") and first is not None \
            and not _overflow(birth):
        return f"{made}: {birth.op} of {_num(first)} is outside its domain.", _EPS_INPUT[family] + "."
    if _overflow(birth):
        largest = _LARGEST.get(birth.dtype, "its largest value")
        near = f" (input {_num(first)})" if first is not None else (
            f" (largest input magnitude {_num(birth.largest)})" if birth.largest is not None else "")
        fix = _EPS_INPUT.get(family, "scale the values down before this op")
        if birth.dtype in ("float16", "bfloat16"):
            fix += "; or run this op in float32 (x.float(), or leave it out of autocast)"
        return f"{made}: the result overflowed {birth.dtype} (largest {largest}){near}.", fix + "."
    if family == "std" and birth.is_nan:
        return (f"{made}: the unbiased standard deviation of a single value divides by n - 1 = 0.",
                "take statistics over more than one value, or pass correction=0 (and add eps where you divide by it).")
    known = [o for o in operands if o is not None]
    return (f"{made} from finite inputs{' (' + ', '.join(map(_num, known)) + ')' if known else ''}.",
            (_EPS_INPUT[family] if family in _EPS_INPUT else
             f"find the input value at which {birth.op} is undefined and keep its input away from it (clamp, eps)")
            + ".")


def _overflow(birth: NonFinite) -> bool:
    """A finite input made an infinite output where the op is defined: the type's range ran out."""
    if birth.value == "nan":
        return False
    first = birth.operands[0] if birth.operands else None
    family = _FAMILY.get(birth.op, "")
    if family in ("log", "div", "rsqrt", "atanh") and first is not None and abs(first) <= 1:
        return False  # log(0), 1/0, rsqrt(0), atanh(1): a pole, not overflow
    if family == "pow" and first == 0:
        return False
    return True


def _backward(birth: NonFinite, family: str, when: str) -> tuple[str, str]:
    value = _value(birth)
    first = birth.operands[0] if birth.operands else None
    made = (f"the backward of {birth.op} made {value}{_at(birth)}{when} from a finite gradient"
            + (f" (its input there was {_num(first)})" if first is not None else ""))
    if birth.grad == 0 and birth.is_nan and family not in ("acos", "atanh"):
        return (f"{made}: 0 arrived there (the unselected branch of torch.where, a mask or a clamp), and 0 times {birth.op}'s "
                "infinite derivative is NaN, although the forward value was masked.",
                f"apply torch.where to the input, not the output: {birth.op}(torch.where(mask, x, 1.0)) inside, then "
                "mask the result (or " + _EPS_INPUT.get(family, "clamp the input") + ").")
    reason = {
        "sqrt": "the derivative of sqrt is infinite at 0",
        "norm": "the norm of a zero vector has no derivative (x / ||x|| is 0/0)",
        "pow": "x.pow(p) with p < 1 has an infinite derivative at 0",
        "div": "the derivative of a / b is infinite at b = 0",
        "log": "the derivative of log is infinite at 0",
        "std": "the standard deviation of equal values is 0, and its derivative divides by it",
        "acos": f"the derivative of {birth.op} is infinite at -1 and 1",
    }.get(family, f"the derivative of {birth.op} is not finite there")
    return f"{made}: {reason}.", _EPS_INPUT.get(family, "keep the op's input away from that value (clamp, eps)") + "."
