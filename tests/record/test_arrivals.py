"""Parameters that get their gradient at every step are noted in bulk after their first backwards: what depends on
the backward that last reached each (a step that finds the gradients erased since) still reads it right."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c import trace


def test_gradients_erased_before_every_step_are_counted_at_every_step() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(5, 4)
    with trace() as traced:
        for _ in range(6):
            model(x).pow(2).mean().backward()
            optimizer.zero_grad()  # erases what the backward just made
            optimizer.step()
    erased = [f for f in traced.findings if f.kind == "optimizer"]
    assert [(f.count, "erased" in f.message) for f in erased] == [(6, True)]
    assert all(w.got_grad for w in traced.watched)

