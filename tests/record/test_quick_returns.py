"""The interceptor returns at once from plain ops whose full path records nothing (a result without history, an op
with gradients off on inputs that need none, a size or a flag): what a trace finds must be what it finds with every
op taken down the full path, in programs where such ops sit beside the ones that do cut."""
from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import pytest
import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record.interceptor import Interceptor

CASES = Path(__file__).resolve().parents[1] / "cases"


def argmax_labels_into_the_loss() -> None:
    """An integer result of values with history is a cut; the batch indexed out of the data and the masks are not."""
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    bias = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([*model.parameters(), bias], lr=0.1)
    data, labels = torch.randn(32, 4), torch.randint(0, 3, (32,))
    for start in range(0, 32, 8):
        batch = torch.arange(start, start + 8)
        x, y = data[batch], labels[batch]
        optimizer.zero_grad()
        predicted = model(x).argmax(dim=1)  # the cut: no gradient flows through argmax
        ((predicted != y).float().mean() + bias).sum().backward()
        optimizer.step()
        assert len(x) == 8 and x.dim() == 2


def update_rebuilt_under_no_grad() -> None:
    """``w = w - lr * w.grad`` under no_grad makes a new tensor without history; the evaluation beside it, on data
    that needs no gradient, cuts nothing."""
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True)
    x, y = torch.randn(16, 4), torch.randn(16)
    for _ in range(3):
        try:
            ((x @ w - y) ** 2).mean().backward()
        except RuntimeError:  # the second backward: the rebuilt w has no graph
            break
        with torch.no_grad():
            w = w - 0.1 * w.grad
            seen = (x @ torch.ones(4)).sum(), (y > 0).float().mean(), x.shape[0]
        assert seen[2] == 16


def unregistered_weight_among_plain_ops() -> None:
    """A weight made by a factory and held unregistered (the corpus's Dice activation), among indexing, masks and
    sizes."""
    with contextlib.redirect_stdout(io.StringIO()):
        runpy.run_path(str(CASES / "b5_dice_alpha_plain_tensor" / "bug.py"), run_name="__main__")


def weight_converted_under_no_grad() -> None:
    """``.float()`` of a weight under no_grad, fed to the loss, is a cut; of the predictions' mask, nothing."""
    torch.manual_seed(0)
    w = torch.randn(4, requires_grad=True, dtype=torch.float64)
    b = torch.zeros(1, requires_grad=True)
    x = torch.randn(8, 4)
    with torch.no_grad():
        frozen = w.float()
        accuracy = ((x @ frozen) > 0).float().mean()
    (x @ frozen + b).sum().backward()
    assert 0 <= accuracy.item() <= 1


PROGRAMS = [argmax_labels_into_the_loss, update_rebuilt_under_no_grad, unregistered_weight_among_plain_ops,
            weight_converted_under_no_grad]


def report(program, full_path: bool, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    if full_path:  # something always carried: no op takes a quick return
        original = Interceptor.__init__

        def carrying_always(self, state) -> None:
            original(self, state)
            self.carrying = (*self.carrying, [True])

        monkeypatch.setattr(Interceptor, "__init__", carrying_always)
    with trace() as traced:
        program()
    monkeypatch.undo()
    return sorted(f"{f.tensor} {f.kind} {f.file}:{f.line} {f.count} {f.message} {f.related}" for f in traced.findings)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda program: program.__name__)
def test_quick_returns_find_what_the_full_path_finds(program, monkeypatch: pytest.MonkeyPatch) -> None:
    quick = report(program, False, monkeypatch)
    assert quick, "each program has a cut to find"
    assert quick == report(program, True, monkeypatch)
