"""Item 3 of "Nothing lost, nothing changed": a script that replaces ``Tensor.backward`` or
``torch.autograd.backward`` (a loss-scaling wrapper) has its wrapper run once per call, traced as untraced,
and the trace sees the backward."""
import pytest
import torch

from gradcheck_l2c import trace


def scaling(original, calls):
    def backward(tensors, *args, **kwargs):
        calls.append(1)
        return original(tensors * 4.0, *args, **kwargs)

    return backward


def step(calls, use_function):
    w = torch.ones(3, requires_grad=True)
    frozen = torch.ones(3, requires_grad=True)
    loss = (w * 2).sum() + (frozen.detach() * 3).sum()
    if use_function:
        torch.autograd.backward(loss)
    else:
        loss.backward()
    return len(calls), w.grad


@pytest.mark.parametrize("use_function", [False, True], ids=["Tensor.backward", "torch.autograd.backward"])
def test_a_wrapped_backward_runs_once_per_call_and_the_trace_sees_it(monkeypatch, use_function):
    owner, name = (torch.autograd, "backward") if use_function else (torch.Tensor, "backward")
    calls = []
    monkeypatch.setattr(owner, name, scaling(getattr(owner, name), calls))
    untraced = step(calls, use_function)
    calls.clear()
    with trace() as t:
        traced = step(calls, use_function)
    assert traced[0] == untraced[0] == 1 and torch.equal(traced[1], untraced[1])
    assert t.backward_count == 1
    assert [f.kind for f in t.findings if f.severity == "error"] == ["detach"]
