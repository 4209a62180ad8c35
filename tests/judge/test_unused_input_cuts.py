"""``autograd.grad`` refuses an input its outputs' graph does not reach ("appears to not have been used in the graph"):
when the outputs took that input's values only through cuts (positions sent to NumPy for a neighbour list and
wrapped back with ``torch.as_tensor``, as e3nn's helper once did), those cuts are the findings, with the refused call
as symptom, and no separate error at the call; done in torch, the forces come out silently."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

CODE = """
import numpy as np
import torch
from torch import nn
torch.manual_seed(0)

net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))
optimizer = torch.optim.Adam(net.parameters(), lr=1e-2)
for step in range(2):
    pos = torch.randn(5, 3, requires_grad=True)
    {edges}
    energy = net(edges).sum()
    forces, = torch.autograd.grad(energy, pos, create_graph=True)  # <- grad
    loss = forces.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""
NUMPY = ("array = pos.detach().numpy()  # <- numpy\n"
         "    edges = torch.as_tensor(array[1:] - array[:-1])  # <- rewrap")


def test_the_cuts_the_input_went_through_are_named(snippet):
    script = snippet(CODE.format(edges=NUMPY))
    with trace() as traced, pytest.raises(RuntimeError, match="appears to not have been used in the graph") as raised:
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert {(f.kind, f.line) for f in found} == {("numpy", script.line("numpy")), ("tensor_rewrap", script.line("rewrap"))}
    assert all(any(r.role == "symptom" and r.line == script.line("grad") for r in f.related) for f in found)
    assert "its values came in only through these cuts" in str(raised.value.__notes__)


def test_edges_computed_in_torch_are_silent(snippet):
    script = snippet(CODE.format(edges="edges = pos[1:] - pos[:-1]"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
