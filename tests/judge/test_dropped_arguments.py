"""open_clip#1076: a model hands its ``logit_bias`` to the loss (``loss(**model_out)``), whose ``forward`` takes it
and calls ``self.get_logits(image, text, scale)``, which takes ``logit_bias=None`` too: left out there, it never
reaches the loss while the other parameters learn. Named at the call that leaves it out, with the ``.grad`` read
as the symptom; passing it on is quiet, and so is a function that reads the argument itself."""
from __future__ import annotations

DROPPED = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.temperature = nn.Parameter(torch.ones(()))

    def forward(self, x):
        return {"features": self.encoder(x), "temperature": self.temperature}


class PairLoss(nn.Module):
    def scores(self, features, temperature=None):
        scores = features @ features.T
        return scores if temperature is None else scores * temperature

    def forward(self, features, temperature=None):
        scores = self.scores(features)  # <- dropped
        return F.cross_entropy(scores, torch.arange(len(scores)))


model, criterion = Model(), PairLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    loss = criterion(**model(torch.randn(3, 4)))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    assert model.temperature.grad is None  # <- read
"""
PASSED = DROPPED.replace("self.scores(features)  # <- dropped", "self.scores(features, temperature)").replace(
    "assert model.temperature.grad is None  # <- read", "assert model.temperature.grad is not None")
# the function reads the argument (to decide without passing it): not a dropped argument, the parameter's own line
READ = DROPPED.replace("        scores = self.scores(features)  # <- dropped", """        assert temperature is not None
        scores = self.scores(features)""")


def _problems(t):
    return [f for f in t.findings if f.severity in ("error", "warning")]


def test_the_call_that_leaves_the_argument_out_is_named(snippet):
    script = snippet(DROPPED)
    found = _problems(script.run())
    assert [(f.kind, f.severity, f.tensor, f.line) for f in found] == [
        ("unused_parameter", "error", "Model.temperature", script.line("dropped"))]
    assert [(r.role, r.line) for r in found[0].related] == [("symptom", script.line("read"))]
    assert "`PairLoss.forward` is given it as `temperature` and never uses it" in found[0].message
    assert "`temperature=temperature`" in found[0].fix


def test_passing_it_on_is_quiet(snippet):
    assert _problems(snippet(PASSED).run()) == []


def test_a_function_that_reads_the_argument_leaves_the_finding_at_the_parameter(snippet):
    script = snippet(READ)
    found = _problems(script.run())
    assert [(f.kind, f.tensor) for f in found] == [("unused_parameter", "Model.temperature")]
    assert found[0].line != script.line("read") and "is given it as" not in found[0].message
