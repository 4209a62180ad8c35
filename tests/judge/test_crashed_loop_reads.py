"""A hand-written loop over a model's parameters that reads each ``.grad`` dies on the None of one that does not
require grad (a pruning mask kept as a frozen Parameter, a layer the script froze): the tool names that loop's line,
says which tensor had no gradient and why, and how to skip it. A loop that skips them, or only logs, is silent."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

MASKED_SGD = """
import torch
from torch import nn
torch.manual_seed(0)


class MaskedLinear(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(mask.shape) * 0.1)
        self.mask = nn.Parameter(mask, requires_grad=False)  # <- made

    def forward(self, x):
        return x @ (self.weight * self.mask).t()


model = MaskedLinear((torch.rand(3, 4) > 0.5).float())
x, y = torch.randn(8, 4), torch.randn(8, 3)
for epoch in range(2):
    loss = (model(x) - y).pow(2).mean()
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= 0.1 * param.grad  # <- update
"""
SKIPPING = MASKED_SGD.replace("            param -= 0.1 * param.grad  # <- update",
                              "            if param.grad is not None:\n                param -= 0.1 * param.grad")

FROZEN_CLIP = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
model[0].requires_grad_(False)  # fine-tune the head only
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
for p in model.parameters():
    p.grad.data.clamp_(-1, 1)  # <- clip
optimizer.step()
"""
LOGGING = FROZEN_CLIP.replace("    p.grad.data.clamp_(-1, 1)  # <- clip",
                              "    print(None if p.grad is None else p.grad.norm().item())")


def _run(script, raises):
    """Run ``script`` under a trace that sees it raise (as the command line's does)."""
    with pytest.raises(raises, match="NoneType"):
        with trace() as traced:
            exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    return [f for f in traced.findings if f.severity in ("error", "warning")]


def test_an_update_loop_dying_on_a_frozen_mask_is_named_at_the_loop(snippet):
    script = snippet(MASKED_SGD)
    found = _run(script, TypeError)
    assert [(f.kind, f.severity, f.line) for f in found] == [("optimizer", "warning", script.line("update"))]
    assert [(r.role, r.line) for r in found[0].related] == [("defined", script.line("made"))]
    assert "requires_grad=False" in found[0].message and "p.grad is None" in found[0].fix


def test_a_clipping_loop_dying_on_a_frozen_layer_names_the_layer(snippet):
    script = snippet(FROZEN_CLIP)
    found = _run(script, AttributeError)
    assert [(f.kind, f.line) for f in found] == [("optimizer", script.line("clip"))]
    assert found[0].tensor.endswith(".weight") and "frozen" in found[0].message


@pytest.mark.parametrize("source", [SKIPPING, LOGGING], ids=["skips frozen", "only logs"])
def test_loops_that_survive_the_none_are_silent(snippet, source):
    assert [f for f in snippet(source).run().findings if f.severity in ("error", "warning")] == []


def test_a_crash_elsewhere_is_not_blamed_on_the_read(snippet):
    script = snippet(MASKED_SGD.replace("param -= 0.1 * param.grad  # <- update",
                                        "param -= 0.1 * (param.grad if param.grad is not None else 0)\n"
                                        "            None + param  # <- elsewhere"))
    assert _run(script, TypeError) == []
