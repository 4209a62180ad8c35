"""An optimizer step fused into the backward (PyTorch's tutorial: a post-accumulate-grad hook per parameter that
steps and clears ``.grad``) is no missing gradient, whether the hooks were set up inside the trace or before it
(a model a fixture built): the tool reads each gradient first, and the training is bitwise the same."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from gradcheck_l2c import trace


def fused_model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 3))
    optimizers = {p: torch.optim.SGD([p], lr=0.1) for p in model.parameters()}

    def step(parameter: torch.Tensor) -> None:
        optimizers[parameter].step()
        optimizers[parameter].zero_grad()

    for parameter in model.parameters():
        parameter.register_post_accumulate_grad_hook(step)
    return model


def train(model: nn.Module) -> list[torch.Tensor]:
    torch.manual_seed(1)
    x, y = torch.randn(16, 8), torch.randint(0, 3, (16,))
    for _ in range(4):
        F.cross_entropy(model(x), y).backward()
    return [p.detach().clone() for p in model.parameters()]


def test_hooks_set_up_inside_the_trace() -> None:
    expected = train(fused_model())
    with trace() as traced:
        weights = train(fused_model())
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))
    assert traced.findings == [] and all(w.got_grad for w in traced.watched) and len(traced.watched) == 4


def test_hooks_set_up_before_the_trace() -> None:
    expected = train(fused_model())
    model = fused_model()
    with trace() as traced:
        weights = train(model)
    assert all(torch.equal(a, b) for a, b in zip(weights, expected))
    assert traced.findings == [] and all(w.got_grad for w in traced.watched) and len(traced.watched) == 4
    assert all(len(p._post_accumulate_grad_hooks) == 1 for p in model.parameters())  # the tool's are removed
