"""A cut of a value whose every path to a weight already sends back only zeros (through ``torch.normal``'s standard
deviation, a sample that is not reparameterised) takes nothing from that weight: the weight's exactly-zero gradient
is named at the sample, not at a ``.detach()`` of the sample further on (the Anomaly Transformer's prior association,
detached in its maximisation loss, the sample's own loss minimised through it)."""
from __future__ import annotations

CODE = """
import torch
from torch import nn
torch.manual_seed(0)

scale, body = nn.Linear(4, 1), nn.Linear(4, 4)
optimizer = torch.optim.SGD([*scale.parameters(), *body.parameters()], lr=0.1)
for step in range(3):
    x = torch.randn(8, 4)
    sigma = scale(x).abs() + 0.1
    prior = {prior}  # <- prior
    out = body(x)
    min_loss = (out.detach() - prior).pow(2).mean()
    max_loss = -(out - prior.detach()).pow(2).mean()  # <- detach
    min_loss.backward()
    max_loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def test_the_sample_is_named_and_the_detach_after_it_is_not(snippet):
    script = snippet(CODE.format(prior="torch.normal(torch.zeros(8, 4), sigma)"))
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert {(f.kind, f.line) for f in found if f.severity == "error"} == {("non_differentiable", script.line("prior"))}
    assert not [f for f in found if f.line == script.line("detach")]


def test_a_reparameterised_sample_is_silent(snippet):
    script = snippet(CODE.format(prior="sigma * torch.randn(8, 4)"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
