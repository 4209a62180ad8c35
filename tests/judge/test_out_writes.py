"""An op given ``out=`` writes into that tensor in place, which no in-place handler sees: with gradients off (the power
iteration of a hand-written spectral norm, ``normalize(..., out=u)`` under ``no_grad``), a second forward overwrites
the ``u`` the first forward saved for backward, and the backward is refused. Named as ``inplace_saved`` at the line
with ``out=``; the twin that uses a copy of ``u`` for the forward is silent."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

POWER = """
import torch
from torch import nn
from torch.nn.functional import normalize
torch.manual_seed(0)
weight = nn.Parameter(torch.randn(1, 6))
u = normalize(torch.randn(1), dim=0)


def normalised():
    with torch.no_grad():
        v = normalize(torch.mv(weight.t(), u), dim=0)
        normalize(torch.mv(weight, v), dim=0, out=u)  # <- out
    sigma = torch.dot(USED, torch.mv(weight, v))
    return weight / sigma


x, y = torch.randn(6), torch.randn(6)
loss = -(normalised() @ x).sum() + (normalised() @ y).sum()
loss.backward()  # <- backward
"""


def test_a_write_through_out_that_makes_a_saved_tensor_stale_is_named(snippet):
    script = snippet(POWER.replace("USED", "u"))
    with trace() as traced, pytest.raises(RuntimeError, match="modified by an inplace operation"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line) for f in found] == [("inplace_saved", script.line("out"))]
    assert "out=" in found[0].fix
    assert ("symptom", script.line("backward")) in {(p.role, p.line) for p in found[0].related}


def test_a_copy_used_by_the_forward_is_silent(snippet):
    script = snippet(POWER.replace("USED", "u.clone()"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
