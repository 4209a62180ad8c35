"""torch's own ``zero_grad()``, gradient clipping and optimizer ``step()`` run past the tracer's torch-function mode, as they would
untraced: a mode of the user's, entered before the trace or inside it, still sees each of their calls, the
updates are bitwise the same, and what a later step finds is still judged."""
from __future__ import annotations

from collections import Counter

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from gradcheck_l2c import trace


class Counting(TorchFunctionMode):
    """A user's mode: counts the torch calls it sees while ``on``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.on = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.on:
            self.calls[getattr(func, "__name__", repr(func))] += 1
        return func(*args, **(kwargs or {}))


def steps(counting: Counting) -> list[torch.Tensor]:
    """Two training steps of a small model; the user's mode counts the calls of zero_grad() and step()."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
    for _ in range(2):
        counting.on = True
        optimizer.zero_grad()
        counting.on = False
        model(torch.ones(3, 4)).sum().backward()
        counting.on = True
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        torch.nn.utils.clip_grad_value_(model.parameters(), 0.1)
        optimizer.step()
        counting.on = False
    return [p.detach().clone() for p in model.parameters()]


def test_a_users_mode_entered_before_the_trace_sees_the_optimizer_code_as_untraced() -> None:
    with Counting() as untraced:
        expected = steps(untraced)
    with Counting() as outer, trace() as traced:
        weights = steps(outer)
    assert outer.calls >= untraced.calls and sum(untraced.calls.values()) > 20  # (and the tool's own reads)
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))
    assert traced.findings == []


def test_a_users_mode_entered_inside_the_trace_sees_the_optimizer_code_as_untraced() -> None:
    with Counting() as untraced:
        expected = steps(untraced)
    with trace() as traced, Counting() as inner:
        weights = steps(inner)
    assert inner.calls >= untraced.calls
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))
    assert traced.findings == []


def test_a_step_past_the_mode_still_finds_the_gradients_zero_grad_erased() -> None:
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with trace() as traced:
        for _ in range(3):
            model(torch.ones(2, 4)).sum().backward()
            optimizer.zero_grad()  # between backward and step: every step finds no gradient
            optimizer.step()
    erased_at = test_a_step_past_the_mode_still_finds_the_gradients_zero_grad_erased.__code__.co_firstlineno + 6
    assert [(f.kind, f.line) for f in traced.findings] == [("optimizer", erased_at)]


def test_gradient_clipping_is_torch_s_own_again_after_the_trace() -> None:
    originals = (torch.nn.utils.clip_grad_norm_, torch.nn.utils.clip_grad.clip_grad_norm_, torch.nn.utils.clip_grad_value_)
    with trace():
        assert torch.nn.utils.clip_grad_norm_ is not originals[0]
    assert (torch.nn.utils.clip_grad_norm_, torch.nn.utils.clip_grad.clip_grad_norm_,
            torch.nn.utils.clip_grad_value_) == originals
