"""A backward started from a leaf (``param.backward(g)``: a DDPG actor "trained" by a gradient taken from the critic)
runs no graph: it only sets that leaf's ``.grad``. The tensors its optimizer holds beside it never take part in a loss,
named at that backward, not where a target network copied their values; a loss's backward is silent."""
from __future__ import annotations

import pytest

CODE = """
import torch
from torch import nn
torch.manual_seed(0)

actor = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
target = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.Adam(actor.parameters(), lr=0.01)
states = torch.randn(16, 6)
for step in range(3):
    for mine, copy in zip(target.parameters(), actor.parameters()):
        mine.data = copy.data.clone()  # a target network, copied by hand
    with torch.no_grad():
        direction = target(states).mean(0)
    optimizer.zero_grad()
    {backward}  # <- backward
    optimizer.step()
print(actor[0].weight.grad)
"""


def run(snippet, backward: str):
    script = snippet(CODE.format(backward=backward))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_backward_from_a_parameter_is_named_for_the_others_its_optimizer_holds(snippet):
    script, found = run(snippet, "actor[2].bias.backward(-direction)")
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("backward"))}
    assert {f.tensor for f in found} == {"actor.0.weight", "actor.0.bias", "actor.2.weight"}
    first = next(f for f in found if f.tensor == "actor.0.weight")
    assert first.severity == "error" and "starts from actor.2.bias, a leaf" in first.message
    assert "not on a parameter" in first.fix


def test_a_loss_s_backward_is_silent(snippet):
    _, found = run(snippet, "(-(actor(states) * direction).sum()).backward()")
    assert found == []


@pytest.mark.parametrize("code", ["x = torch.randn(3, requires_grad=True)\nx.backward(torch.ones(3))\nprint(x.grad)"])
def test_a_lone_leaf_given_its_gradient_by_backward_is_silent(snippet, code):
    """Nothing shares an optimizer with it: no other tensor was meant to learn from that backward."""
    script = snippet("import torch\n" + code)
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
