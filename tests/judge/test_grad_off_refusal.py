"""A backward refused because its loss has no graph, called while gradients are off: Grad-CAM run from a validation
hook that a trainer calls under ``torch.no_grad()``, after the model trained (so the forward under it records no cut:
its weights had learnt). The finding is a ``no_grad`` error at the call into the function that computed the loss and
ran the backward, naming the block that turned gradients off; that function's own block is named instead; under
``torch.enable_grad()`` it runs silently."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

CODE = """
import torch
from torch import nn
torch.manual_seed(0)

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(6, 4)
for step in range(2):
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


def saliency(inputs):
    scores = model(inputs).max(dim=1).values.sum()
    scores.backward()  # <- backward
    return inputs


def validate():
    {call}


with torch.no_grad():  # <- block
    validate()
"""
CALL = "return saliency(x.clone())  # <- call"


def _findings(script):
    with trace() as traced, pytest.raises(RuntimeError, match="does not require grad"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    return [f for f in traced.findings if f.severity in ("error", "warning")]


def test_the_call_run_with_gradients_off_is_named(snippet):
    script = snippet(CODE.format(call=CALL))
    found = _findings(script)
    assert [(f.kind, f.line) for f in found] == [("no_grad", script.line("call"))]
    assert f"at {script.path.name}:{script.line('block')}" in found[0].message
    assert "torch.enable_grad()" in found[0].fix
    assert any(r.role == "symptom" and r.line == script.line("backward") for r in found[0].related)


def test_the_function_that_turned_them_off_is_named_at_its_block(snippet):
    code = CODE.format(call=CALL).replace("def saliency(inputs):\n",
                                          "@torch.no_grad()  # <- decorator\ndef saliency(inputs):\n")
    script = snippet(code)
    assert [(f.kind, f.line) for f in _findings(script)] == [("no_grad", script.line("decorator"))]


def test_gradients_turned_back_on_are_silent(snippet):
    script = snippet(CODE.format(call="with torch.enable_grad():\n        return saliency(x.clone())"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
