"""A traced ``loss.backward()`` of a plain scalar goes straight to the engine call torch's ``autograd.backward`` would
make (`torch_internals.run_backward`): the gradients, the errors and a script's own replacement of
``autograd.backward`` must be exactly as untraced, and every other call must run torch's own way."""
from __future__ import annotations

from typing import Any, Callable

import pytest
import torch

from gradcheck_l2c import trace
from gradcheck_l2c.record import torch_internals
from gradcheck_l2c.record.torch_internals import TENSOR_BACKWARD, run_backward


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The calls `run_backward` makes straight to the engine."""
    calls: list[tuple] = []
    original = torch_internals._run_engine

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(torch_internals, "_run_engine", counted)
    return calls


def _grads(make_loss: Callable[[torch.Tensor], torch.Tensor], backward: Callable[[torch.Tensor], Any],
           dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    weight = torch.randn(5, 5, dtype=dtype, requires_grad=True)
    x = torch.randn(5, dtype=dtype, requires_grad=True)
    backward(make_loss(weight @ x))
    return weight.grad, x.grad


def _keywords(**given: Any) -> dict[str, Any]:
    """The keywords the stand-in for ``Tensor.backward`` hands over (`wrappers.tensor_backward`)."""
    return {"gradient": None, "retain_graph": None, "create_graph": False, "inputs": None, **given}


def test_this_torchs_backward_code_is_the_code_the_shortcut_was_checked_against() -> None:
    # a torch whose Tensor.backward, autograd.backward or _make_grads changed runs torch's own way (correct, slower)
    assert torch_internals.BACKWARD_CHECKED, (
        f"torch {torch.__version__}: its Tensor.backward, autograd.backward or _make_grads is not the code "
        f"run_backward was checked against; read them against it, then add {torch_internals.BACKWARD_FINGERPRINT!r} "
        "to CHECKED_BACKWARDS in gradcheck_l2c/record/torch_internals.py")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("make_loss", [lambda y: y.tanh().sum(), lambda y: y.pow(2).sum().reshape(1, 1)],
                         ids=["0-dim", "1x1"])
def test_a_scalar_loss_gets_bitwise_the_gradients_of_torchs_backward(
        engine_calls: list, make_loss: Callable, dtype: torch.dtype) -> None:
    expected = _grads(make_loss, lambda loss: loss.backward(), dtype)
    got = _grads(make_loss, lambda loss: run_backward(TENSOR_BACKWARD, (loss,), _keywords()), dtype)
    assert len(engine_calls) == 1
    for want, have in zip(expected, got):
        assert have.dtype == want.dtype and torch.equal(have, want)


def test_retain_graph_is_passed_on_and_a_second_backward_through_a_freed_graph_fails_as_untraced(
        engine_calls: list) -> None:
    torch.manual_seed(0)
    loss = (torch.randn(3, requires_grad=True) * 2).sum()
    run_backward(TENSOR_BACKWARD, (loss,), _keywords(retain_graph=True))
    run_backward(TENSOR_BACKWARD, (loss,), _keywords())
    with pytest.raises(RuntimeError) as shortcut:
        run_backward(TENSOR_BACKWARD, (loss,), _keywords())
    other = (torch.randn(3, requires_grad=True) * 2).sum()
    other.backward()
    with pytest.raises(RuntimeError) as untraced:
        other.backward()
    assert str(shortcut.value) == str(untraced.value)
    assert [call[2] for call in engine_calls] == [True, False, False]


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("case", ["non-scalar", "gradient", "create_graph", "inputs", "no grad", "integer",
                                  "complex", "retain_graph=1"])
def test_every_other_backward_runs_torchs_own_way(engine_calls: list, case: str) -> None:
    torch.manual_seed(0)
    leaf = torch.randn(3, dtype=torch.complex64 if case == "complex" else torch.float32, requires_grad=True)
    keywords = _keywords(**{"gradient": {"gradient": torch.ones(3)}, "create_graph": {"create_graph": True},
                            "inputs": {"inputs": [leaf]}, "retain_graph=1": {"retain_graph": 1}}.get(case, {}))

    def output() -> torch.Tensor:  # a graph of its own for each backward
        out = leaf * 2 if case in ("non-scalar", "gradient") else (leaf * 2).sum()
        return out.detach() if case == "no grad" else torch.tensor(3) if case == "integer" else out

    outcomes = []
    for backward in (run_backward, lambda func, args, kwargs: func(*args, **kwargs)):
        leaf.grad = None
        try:
            backward(TENSOR_BACKWARD, (output(),), keywords)
            outcomes.append(leaf.grad.clone())
        except RuntimeError as error:
            outcomes.append(str(error))
    assert type(outcomes[0]) is type(outcomes[1])
    assert outcomes[0] == outcomes[1] if isinstance(outcomes[0], str) else torch.equal(outcomes[0], outcomes[1])
    assert engine_calls == []


def test_a_scripts_own_autograd_backward_still_runs_under_a_trace(monkeypatch: pytest.MonkeyPatch,
                                                                  engine_calls: list) -> None:
    scaled = []
    original = torch.autograd.backward

    def loss_scaling(tensors: Any, *args: Any, **kwargs: Any) -> Any:  # Tensor.backward calls it by this name
        scaled.append(tensors)
        return original(tensors * 4, *args, **kwargs)

    monkeypatch.setattr(torch.autograd, "backward", loss_scaling)
    torch.manual_seed(0)
    with trace() as traced:
        x = torch.randn(3, requires_grad=True)
        (x * 1.5).sum().backward()
    assert len(scaled) == 1 and engine_calls == []
    assert torch.equal(x.grad, torch.full((3,), 6.0))
    assert [w.got_grad for w in traced.watched] == [True]


def test_a_traced_loop_takes_the_shortcut_and_learns_as_untraced(engine_calls: list) -> None:
    def train() -> torch.Tensor:
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(5):
            optimizer.zero_grad()
            model(torch.randn(16, 4)).pow(2).mean().backward()
            optimizer.step()
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    untraced = train()
    with trace() as traced:
        traced_weights = train()
    assert torch.equal(traced_weights, untraced)
    assert len(engine_calls) == 5 and not traced.findings
