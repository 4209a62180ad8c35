"""Clamps whose every value lies beyond a bound: no gradient passes them (exactly zero, not None).

A clamp is differentiable where its input lies inside the range; a bound left above every value (a debug lower
bound over a small learned scale) passes nothing back at any step, and the weight behind it stays where it was with
a gradient of exactly zero. Such a call is recorded as a `non_differentiable` event without cutting anything: the
judge names it only for a watched tensor whose gradient stayed exactly zero (`judge.run._zero_gradients`).
"""
from __future__ import annotations

from typing import Any

import torch

from gradcheck_l2c.record.args import op_label
from gradcheck_l2c.record.locations import user_site

Tensor = torch.Tensor
#: The out-of-place clamps (the in-place ones are writes, `handlers.on_inplace`).
CLAMPS = frozenset(getattr(owner, name) for owner in (torch, Tensor) for name in ("clamp", "clip", "clamp_min",
                                                                                  "clamp_max") if hasattr(owner, name))


def clamped_everywhere(mode: Any, func: Any, args: tuple, kwargs: dict) -> bool:
    """Whether this clamp of a tensor with history by number bounds found every value strictly below the lower bound
    or above the upper one (recorded if so). One reduction per bound, no tensor of the input's size; values on both
    sides of the range at once, and bounds given as tensors, are not looked at."""
    source = args[0] if args else kwargs.get("input")
    if not isinstance(source, Tensor) or not source.requires_grad or not source.numel():
        return False
    upper_only = func.__name__ == "clamp_max"
    low = kwargs.get("min", args[1] if len(args) > 1 and not upper_only else None)
    high = kwargs.get("max", args[1] if len(args) > 1 and upper_only else args[2] if len(args) > 2 else None)
    if not all(bound is None or type(bound) in (int, float) for bound in (low, high)):
        return False
    with torch.no_grad():
        beyond = (low is not None and bool(source.max() < low)) or (high is not None and bool(source.min() > high))
    if beyond:
        mode.cuts.cut("non_differentiable", op_label(func), [source], site=user_site(1), output="saturated")
    return beyond
