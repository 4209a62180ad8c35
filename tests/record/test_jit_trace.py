"""``torch.jit.trace`` under a trace: TorchScript's tracer records every op run while it traces, the tool's own
too, and names values after the locals of the frame that runs each op. The interceptor steps aside meanwhile, so
the traced graph holds the script's ops alone, its sanity check (a second trace compared with the first) passes
as it does untraced, and training through the traced module gives the same weights."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c import trace


class Wrapper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = next(self.parameters())
        weight.requires_grad = True
        return self.body(x).mean()


def _train() -> tuple[list[str], list[torch.Tensor]]:
    torch.manual_seed(0)
    model = Wrapper()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(5, 4)
    traced = torch.jit.trace(model, (x,))  # checks the trace by tracing again
    for _ in range(3):
        loss = (traced(x) - 1.0) ** 2
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return [node.kind() for node in traced.graph.nodes()], [p.detach().clone() for p in model.parameters()]


def test_a_traced_module_traces_trains_and_ends_as_untraced():
    kinds, weights = _train()
    with trace() as traced:
        traced_kinds, traced_weights = _train()
    assert traced_kinds == kinds
    assert all(torch.equal(a, b) for a, b in zip(traced_weights, weights))
    assert [f for f in traced.findings if f.severity in ("error", "warning")] == []
