"""A ``copy_`` in grad mode is an in-place write like ``+=``: into a tensor that a multiplication saved for backward (a
recurrent state read from a cache and written back at the end of the step), it makes the backward fail, and the tool
names the ``copy_``, where before it could only say that a write it did not see changed the saved tensor."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

CACHED_STATE = """
import torch
from torch import nn
torch.manual_seed(0)
decay = nn.Parameter(torch.rand(4))
states = torch.zeros(2, 3, 4)  # one cached state per layer, no history of its own
for layer in range(2):
    state = states[layer]
    new = state * decay + torch.randn(3, 4)
    states[layer].copy_(new)  # <- write
loss = new.pow(2).sum()
loss.backward()  # <- backward
"""
CLONED = CACHED_STATE.replace("state = states[layer]", "state = states[layer].clone()")


def test_a_copy_into_a_saved_cache_is_named_as_the_write(snippet):
    script = snippet(CACHED_STATE)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        with trace() as traced:
            exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line) for f in found] == [("inplace_saved", script.line("write"))]
    assert any(r.role == "symptom" and r.line == script.line("backward") for r in found[0].related)


def test_a_state_cloned_from_the_cache_is_silent(snippet):
    script = snippet(CLONED)
    assert "clone()" in script.code
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
