"""Item 2 of "Nothing lost, nothing changed": a torch.compile'd model computes, traced, bit for bit what it
computes untraced, and a cut inside the compiled forward is shown at its own line (backend "eager": the
graph's operations run in Python, where the tracer sees them)."""
import pytest
import torch
from torch import nn

from gradcheck_l2c import trace


class Detached(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 1)

    def forward(self, x):
        hidden = self.a(x).relu()
        hidden = hidden.detach()  # the cut
        return self.b(hidden)


FORWARD = Detached.forward.__code__.co_firstlineno  # where a compiled frame's line used to land
CUT_LINE = FORWARD + 2


def train(steps=12):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = Detached()
    compiled = torch.compile(model, backend="eager")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(steps):
        x = torch.randn(16, 8) * (1 + step)  # new values each step, same shapes
        loss = compiled(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach().clone())
    return torch.stack(losses), [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("record_sites", [False, True], ids=["report", "render"])
def test_a_compiled_model_computes_bitwise_the_same_traced_and_its_cut_is_at_its_own_line(record_sites):
    losses, weights = train()
    with trace(record_sites=record_sites) as t:
        traced_losses, traced_weights = train()
    assert torch.equal(losses, traced_losses)
    assert all(torch.equal(a, b) for a, b in zip(weights, traced_weights))
    in_forward = {(f.kind, f.line) for f in t.findings if f.file == __file__ and FORWARD <= f.line <= CUT_LINE + 1}
    assert in_forward == {("detach", CUT_LINE)}  # the snapshots train() takes are detaches of its own
