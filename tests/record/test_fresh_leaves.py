"""A user's fresh leaf has its gradient read from ``.grad`` when its first backward ends, and is hooked only if it
outlives that backward (`record/arrival_hooks.py`): whatever could hide a gradient from that read (a hook of the
user's that clears it, a backward inside a backward, a leaf that lives on) must be seen as a hook sees it."""
from __future__ import annotations

import threading

import pytest
import torch

from gradcheck_l2c import trace


def test_a_fresh_leaf_whose_own_hook_steps_and_clears_its_gradient_got_it() -> None:
    torch.manual_seed(0)
    weight = torch.randn(4, 4)
    seen = []

    def step(leaf: torch.Tensor) -> None:  # an optimizer fused into the backward: .grad is gone after it
        seen.append(leaf.grad.clone())
        leaf.grad = None

    with trace() as traced:
        for _ in range(3):
            x = torch.randn(4, requires_grad=True)
            x.register_post_accumulate_grad_hook(step)
            (weight @ x).tanh().sum().backward()
    assert len(seen) == 3 and x.grad is None
    assert [w.got_grad for w in traced.watched] == [True, True, True]
    assert not traced.findings


def test_a_leaf_that_lives_on_is_followed_at_every_backward() -> None:
    torch.manual_seed(0)
    weight = torch.randn(4, 4)
    with trace() as traced:
        x = torch.randn(4, requires_grad=True)
        optimizer = torch.optim.SGD([x], lr=0.1)
        for _ in range(4):
            (weight @ x).pow(2).sum().backward()
            optimizer.zero_grad()  # erases what each backward made, before every step
            optimizer.step()
    erased = [f for f in traced.findings if f.kind == "optimizer"]
    assert [(f.count, "erased" in f.message) for f in erased] == [(4, True)]


def test_a_leaf_kept_unused_for_backwards_then_used_gets_its_gradient_noted() -> None:
    torch.manual_seed(0)
    weight = torch.randn(4, 4)
    with trace() as traced:
        late = torch.randn(4, requires_grad=True)  # read after the first backward, hooked at the second
        for step in range(4):
            x = torch.randn(4, requires_grad=True)
            loss = (weight @ x).sum() + (late.sum() if step == 3 else 0)
            loss.backward()
    assert late.grad is not None
    assert [w.got_grad for w in traced.watched if w.name == "late"] == [True]
    assert not traced.findings


def test_a_backward_inside_a_backward_leaves_the_outer_ones_gradient_seen() -> None:
    def run() -> tuple[torch.Tensor, torch.Tensor]:
        torch.manual_seed(0)
        weight = torch.randn(4, 4)
        x = torch.randn(4, requires_grad=True)
        z = torch.randn(4, requires_grad=True)
        hidden = weight @ x

        def again(grad: torch.Tensor) -> None:  # a second backward, run by the first before x's gradient is in
            with torch.enable_grad():
                (z * 2).sum().backward()

        hidden.register_hook(again)
        hidden.tanh().sum().backward()
        return x.grad, z.grad

    untraced = run()
    with trace() as traced:
        traced_grads = run()
    assert all(torch.equal(a, b) for a, b in zip(untraced, traced_grads))
    assert [w.got_grad for w in traced.watched] == [True, True]
    assert not traced.findings


def test_a_fresh_leaf_reached_only_by_a_backward_of_another_thread_got_its_gradient() -> None:
    torch.manual_seed(0)
    weight = torch.randn(4, 4)
    with trace() as traced:
        x = torch.randn(4, requires_grad=True)
        y = torch.randn(4, requires_grad=True)
        worker = threading.Thread(target=lambda: (weight @ x).sum().backward())
        worker.start()
        worker.join()
        (weight @ y).sum().backward()
    assert [w.got_grad for w in traced.watched] == [True, True]
    assert [f.kind for f in traced.findings] == ["untraced_thread"]


def test_late_samples_of_a_per_sample_loop_with_exactly_zero_gradients_say_nothing() -> None:
    """A line whose leaves got gradients holding values many times in a row is trusted (`arrivals.TRUSTED`): a later
    sample whose gradient is exactly zero (every unit dead for that input) is no missing gradient, and a loop that
    makes a leaf at every step stops paying a zero check for each."""
    torch.manual_seed(0)
    weight = torch.randn(4, 4)
    with trace() as traced:
        for step in range(40):
            x = torch.randn(4, requires_grad=True)
            torch.relu(weight @ x - (0.0 if step < 30 else 1e3)).sum().backward()
    assert x.grad is not None and not x.grad.any()
    assert traced.findings == []
    assert len(traced.watched) == 40 and all(w.got_grad for w in traced.watched)


@pytest.mark.parametrize("rounded_from, steps", [(5, 40), (40, 160)], ids=["before trust", "after trust"])
def test_a_loop_that_turns_to_a_zero_derivative_op_has_the_cut_named(rounded_from: int, steps: int) -> None:
    """Zeros before a line was trusted keep its every later leaf checked; after, every `RECHECK`-th leaf of a
    trusted line is checked all the same: a loop that quantises its input from some step on (a second epoch) has
    the cut named, however many leaves got gradients before."""
    torch.manual_seed(0)
    weight = torch.randn(4, 4)
    with trace() as traced:
        for step in range(steps):
            x = torch.randn(4, requires_grad=True)
            (weight @ x if step < rounded_from else (weight @ x).round()).sum().backward()
    assert traced.findings
    assert all((f.kind, f.severity, f.line) == ("non_differentiable", "error", traced.findings[0].line)
               and "round" in f.message for f in traced.findings)


def _noise(weight: torch.Tensor) -> torch.Tensor:
    """A per-step leaf made in a helper: no user frame holds it in a variable when a backward runs."""
    return torch.randn(4, requires_grad=True)


def test_the_fresh_leaves_of_a_long_loop_are_named_by_their_variable_or_their_line() -> None:
    """Most of a loop's leaves are gone before a discovery pass (every 50th backward) could see them: those of a
    line whose other leaves a pass saw in a variable take that variable's name, the others their line's."""
    torch.manual_seed(0)
    weight = torch.randn(4, 4)
    with trace(watch="x") as only_x, trace() as traced:
        for _ in range(120):
            x = torch.randn(4, requires_grad=True)
            (weight @ (x + _noise(weight))).tanh().sum().backward()
    line = _noise.__code__.co_firstlineno + 2
    names = [w.name for w in traced.watched]
    assert len(names) == 240 and names[0::2] == ["x"] * 120
    assert set(names[1::2]) == {f"test_fresh_leaves.py:{line}"}
    assert [w.name for w in only_x.watched] == ["x"] * 120  # each one's aliases lead with the variable
    assert not traced.findings
