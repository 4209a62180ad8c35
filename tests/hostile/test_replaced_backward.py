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


def test_a_wrapper_installed_during_the_trace_runs_once_and_stays_after_it():
    """The trace hands plain tensors' backward to its interceptor through a stand-in for ``Tensor.backward``; a
    script that wraps ``Tensor.backward`` after the trace began wraps that stand-in: its wrapper runs once per
    call, the trace sees the backward, and the wrapper is the script's ``Tensor.backward`` after the trace too
    (the stand-in it holds then calls torch's own)."""
    torch_backward = torch.Tensor.__dict__["backward"]
    calls = []
    try:
        with trace() as t:
            torch.Tensor.backward = scaling(torch.Tensor.backward, calls)
            traced = step(calls, use_function=False)
        assert traced[0] == 1 and torch.equal(traced[1], torch.full((3,), 8.0))
        assert t.backward_count == 1
        assert [f.kind for f in t.findings if f.severity == "error"] == ["detach"]
        calls.clear()
        assert step(calls, use_function=False)[0] == 1
    finally:
        torch.Tensor.backward = torch_backward


def test_a_tensor_subclass_backward_is_torchs_own_path_and_is_seen():
    """A subclass with its own ``__torch_function__`` keeps torch's dispatch: the mode, then the subclass."""
    seen = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(getattr(func, "__name__", ""))
            return super().__torch_function__(func, types, args, kwargs or {})

    w = torch.ones(3, requires_grad=True)
    with trace() as t:
        loss = (w * 2).sum().as_subclass(Logged)
        loss.backward()
    assert "backward" in seen and torch.equal(w.grad, torch.full((3,), 2.0))
    assert t.backward_count == 1


@pytest.mark.parametrize("use_function", [False, True], ids=["Tensor.backward", "torch.autograd.backward"])
def test_a_wrapper_during_the_first_trace_of_a_process_leaves_later_traces_seeing_backwards(monkeypatch, use_function):
    """What the interceptor routes is built once per process: a wrapper standing in for torch's backward then must
    not hide torch's own from the traces after it."""
    from gradcheck_l2c.record.handlers import handler_table

    owner, name = (torch.autograd, "backward") if use_function else (torch.Tensor, "backward")
    handler_table.cache_clear()
    with monkeypatch.context() as patched:
        patched.setattr(owner, name, scaling(getattr(owner, name), []))
        with trace() as first:
            step([], use_function)
    with trace() as later:
        _, grad = step([], use_function)
    assert first.backward_count == later.backward_count == 1
    assert torch.equal(grad, torch.full((3,), 2.0))


def test_a_backward_with_torch_functions_switched_off_reaches_no_mode_as_untraced():
    """With torch functions off (``DisableTorchFunction``) torch's backward asks no mode to handle it; the
    trace's stand-in for ``Tensor.backward`` asks none either."""
    w = torch.ones(3, requires_grad=True)
    with trace() as t:
        loss = (w * 2).sum()
        with torch._C.DisableTorchFunction():
            loss.backward()
    assert t.backward_count == 0 and torch.equal(w.grad, torch.full((3,), 2.0))
