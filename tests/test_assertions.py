"""assert_grad_reaches / assert_grad_flows / assert_trace_clean on real steps written to disk."""
from __future__ import annotations

import runpy

import pytest
import torch
from torch import nn

from gradcheck_l2c.assertions import (
    assert_grad_flows,
    assert_grad_reaches,
    assert_trace_clean,
    check_fail_on,
)
from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.tracer import trace

# The seed's mistake in small: alpha's mixing weights leave the graph through .item() and the
# aggregate is loaded into the model; the fix runs the model on the aggregate with functional_call.
STEPS = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.alpha = nn.Parameter(torch.zeros(2))

    def forward(self, x):
        return self.fc(x)


class Unregistered(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.w = torch.ones(3, requires_grad=True)

    def forward(self, x):
        return self.fc(x) * self.w


def broken_loss(model, deltas, x, y):
    w = torch.softmax(model.alpha, dim=0)
    theta = {n: p.detach().clone() for n, p in model.fc.named_parameters()}
    for j, delta in enumerate(deltas):
        for n in theta:
            theta[n] -= w[j].item() * delta[n]  # <- item
    model.fc.load_state_dict(theta)  # <- reload
    return F.cross_entropy(model(x), y)


def fixed_loss(model, deltas, x, y):
    w = torch.softmax(model.alpha, dim=0)
    theta = {f"fc.{n}": p.detach() - sum(w[j] * d[n] for j, d in enumerate(deltas))
             for n, p in model.fc.named_parameters()}
    return F.cross_entropy(functional_call(model, theta, (x,)), y)


def train_step(loss_fn, model, deltas, x, y):
    loss_fn(model, deltas, x, y).backward()


def make_inputs():
    torch.manual_seed(0)
    model = Net()
    deltas = [{n: torch.randn_like(p) for n, p in model.fc.named_parameters()} for _ in range(2)]
    return model, deltas, torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])
"""


@pytest.fixture
def steps(snippet):
    """The step functions, defined in a real file so findings point at its lines."""
    script = snippet(STEPS)
    namespace = runpy.run_path(str(script.path))
    namespace["script"] = script
    return namespace


class Three(nn.Module):
    """One parameter reached, one multiplied by zero, one never used."""

    def __init__(self) -> None:
        super().__init__()
        self.used = nn.Parameter(torch.ones(2))
        self.zeroed = nn.Parameter(torch.ones(2))
        self.unused = nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.used + x * self.zeroed * 0).sum()


def test_passes_without_touching_grads_or_the_graph(steps):
    model, deltas, x, y = steps["make_inputs"]()
    loss = steps["fixed_loss"](model, deltas, x, y)
    model.fc.weight.grad = torch.full_like(model.fc.weight, 7.0)

    assert_grad_reaches(loss, model.alpha)

    assert model.alpha.grad is None
    assert torch.equal(model.fc.weight.grad, torch.full_like(model.fc.weight, 7.0))
    (expected,) = torch.autograd.grad(loss, model.alpha, retain_graph=True)
    loss.backward()  # the graph is still there
    assert torch.allclose(model.alpha.grad, expected)
    assert torch.count_nonzero(model.alpha.grad) > 0


def test_lists_every_failing_tensor_with_where_its_path_ends():
    model = Three()
    frozen = torch.ones(2)
    loss = model(torch.ones(2)) + (frozen * 2).sum()

    with pytest.raises(AssertionError) as failure:
        assert_grad_reaches(loss, model, frozen)

    assert str(failure.value).splitlines() == [
        "3 of 4 tensors got no gradient from the loss:",
        "  model.zeroed (2,): gradient is all zeros",
        "  model.unused (3,): not reachable from the loss: nothing in the loss's graph leads to it",
        "  frozen (2,): requires_grad is False, so autograd never tracks it",
        "Run the step under gradcheck_l2c.trace() or @pytest.mark.gradcheck to see the file:line "
        "that cut each one.",
    ]


def test_names_the_cut_and_its_line_when_a_trace_runs(steps):
    model, deltas, x, y = steps["make_inputs"]()
    script = steps["script"]
    with trace(watch="*.alpha"):
        loss = steps["broken_loss"](model, deltas, x, y)
        with pytest.raises(AssertionError) as failure:
            assert_grad_reaches(loss, model.alpha)

    message = str(failure.value)
    assert message.startswith(
        "1 of 1 tensor got no gradient from the loss:\n"
        "  model.alpha (2,): not reachable from the loss: nothing in the loss's graph leads to it\n"
    )
    assert f"{script.path}:{script.line('item')}: .item()" in message
    assert f"{script.path}:{script.line('reload')}: load_state_dict()" in message
    assert "fix: evaluate the model at the computed weights with torch.func.functional_call" in message
    assert "Run the step under" not in message


def test_allow_zero_accepts_a_zero_gradient():
    model = Three()
    loss = model(torch.ones(2))
    assert_grad_reaches(loss, model.used, model.zeroed, allow_zero=True)
    with pytest.raises(AssertionError, match="zeroed"):
        assert_grad_reaches(loss, model.used, model.zeroed)


@pytest.mark.parametrize(
    "exclude",
    [["zeroed", "unused"], ["zero*", "*.un*"], ["model.zeroed", "model.unused"], "tensors"],
    ids=["names", "glob", "qualified", "tensors"],
)
def test_exclude_skips_tensors_by_name_glob_or_object(exclude):
    model = Three()
    loss = model(torch.ones(2))
    if exclude == "tensors":
        exclude = [model.zeroed, model.unused]
    assert_grad_reaches(loss, model, exclude=exclude)


def test_exclude_that_removes_everything_is_an_error():
    model = Three()
    with pytest.raises(ValueError, match="nothing is left to check"):
        assert_grad_reaches(model(torch.ones(2)), model, exclude="*")


def test_checks_intermediate_tensors_too():
    model = Three()
    hidden = torch.ones(2) * model.used
    elsewhere = torch.ones(2) * model.used
    loss = hidden.sum()
    assert_grad_reaches(loss, hidden)
    with pytest.raises(AssertionError, match="elsewhere .*not reachable"):
        assert_grad_reaches(loss, elsewhere)
    first, second = (torch.ones(2) * model.used).unbind()
    with pytest.raises(AssertionError, match=r"second \(\): made by an op in the loss's graph, but the loss "
                       "does not use this output of it"):
        assert_grad_reaches(first * 3, first, second)


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "words"),
    [
        ((1.0, nn.Linear(2, 2)), {}, TypeError, "loss must be a torch.Tensor, got float"),
        ((torch.ones(2).sum(), nn.Linear(2, 2)), {}, AssertionError, "loss has no grad_fn.*gradcheck_l2c.trace"),
        (("loss",), {}, TypeError, "give at least one tensor or module"),
        (("loss", [torch.ones(1)]), {}, TypeError, "target 1 is a list; .*separate arguments"),
        (("loss", "weight"), {}, TypeError, "target 1 is a str"),
        (("loss", nn.Linear(2, 2)), {"exclude": [3]}, TypeError, "exclude holds a int"),
        (("loss", nn.Linear(2, 2)), {"exclude": 3}, TypeError, "exclude must be names, globs or tensors"),
    ],
    ids=["loss-float", "loss-no-grad-fn", "no-targets", "list-target", "str-target", "exclude-item",
         "exclude-type"],
)
def test_bad_arguments_get_a_clear_error(args, kwargs, error, words):
    loss = (nn.Parameter(torch.ones(2)) * 2).sum()
    args = tuple(loss if a == "loss" else a for a in args)
    with pytest.raises(error, match=words):
        assert_grad_reaches(*args, **kwargs)


def test_after_backward_says_how_to_keep_the_graph():
    model = Three()
    loss = model(torch.ones(2))
    loss.backward()
    with pytest.raises(UsageError, match=r"Call it before loss.backward\(\).*retain_graph=True"):
        assert_grad_reaches(loss, model.used)


def test_assert_grad_flows_fails_with_the_report_of_the_broken_step(steps):
    model, deltas, x, y = steps["make_inputs"]()
    script = steps["script"]
    with pytest.raises(AssertionError) as failure:
        assert_grad_flows(steps["train_step"], steps["broken_loss"], model, deltas, x, y, watch="*.alpha")
    report = str(failure.value)
    assert "got no gradient" in report
    assert f"{script.path}:{script.line('item')}: error: item" in report
    assert f"{script.path}:{script.line('reload')}: error: state_dict_reload" in report


def test_assert_grad_flows_returns_the_trace_of_the_fixed_step(steps):
    model, deltas, x, y = steps["make_inputs"]()
    t = assert_grad_flows(steps["train_step"], steps["fixed_loss"], model, deltas, x, y, watch="*.alpha")
    assert [(w.name, w.got_grad) for w in t.watched] == [("Net.alpha", True)]
    assert t.backward_count == 1
    assert model.alpha.grad is not None


def test_assert_grad_flows_fails_when_the_step_never_calls_backward(steps):
    model, deltas, x, y = steps["make_inputs"]()
    with pytest.raises(AssertionError, match="fixed_loss ran no backward pass"):
        assert_grad_flows(steps["fixed_loss"], model, deltas, x, y, watch="*.alpha")


def test_assert_grad_flows_rejects_a_watch_name_that_matches_nothing(steps):
    model, deltas, x, y = steps["make_inputs"]()
    with pytest.raises(UsageError, match=r"'\*\.alpah' matched no tensor; the trace saw: .*Net\.alpha"):
        assert_grad_flows(steps["train_step"], steps["fixed_loss"], model, deltas, x, y, watch="*.alpah")


def test_assert_grad_flows_is_a_no_op_when_tracing_is_disabled(steps, monkeypatch):
    monkeypatch.setenv("GRADCHECK_L2C_DISABLED", "1")
    model, deltas, x, y = steps["make_inputs"]()
    t = assert_grad_flows(steps["train_step"], steps["broken_loss"], model, deltas, x, y, watch="*.alpha")
    assert t.findings == []


def test_fail_on_picks_the_least_severe_finding_that_fails(steps):
    model = steps["Unregistered"]()
    with trace() as t:
        model(torch.ones(2, 4)).sum().backward()
    assert {f.severity for f in t.findings} == {"warning"}
    assert_trace_clean(t)
    assert_trace_clean(t, fail_on="never")
    with pytest.raises(AssertionError, match="Unregistered.w is a tensor with requires_grad=True"):
        assert_trace_clean(t, fail_on="warning")


def test_fail_on_must_be_a_known_severity():
    with pytest.raises(ValueError, match="fail_on='fatal' is not one of 'error', 'warning', 'info', 'never'"):
        check_fail_on("fatal")
