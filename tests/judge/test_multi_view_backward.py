"""A backward refused because one of the several views an op returned (unbind, or unpacking a tensor) is saved for
it while the tensor they came from was written into in place later (a rollout storing each state into a preallocated
buffer and unpacking the previous one): PyTorch notices only in the backward. The refusal is an ``autograd_error``
at the line that took the tensor apart, where a ``.clone()`` fixes it, not at the backward."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

UNPACKED = """
import torch
torch.manual_seed(0)
rate = torch.tensor(0.5, requires_grad=True)


def step(state):
    position, velocity = state  # <- unpack
    return torch.stack([position + velocity * rate, velocity * rate])


states = torch.zeros(4, 2)
states[0] = torch.tensor([0.0, 1.0])
for t in range(3):
    states[t + 1] = step(states[t])
loss = states.pow(2).sum()
loss.backward()  # <- backward
print(rate.grad)
"""
CLONED = UNPACKED.replace("position, velocity = state", "position, velocity = state.clone()")


def test_the_refusal_is_named_where_the_tensor_is_taken_apart(snippet):
    script = snippet(UNPACKED)
    with trace() as traced, pytest.raises(RuntimeError, match="returns multiple views"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("unpack"))]
    assert ".clone()" in found[0].fix
    assert f":{script.line('backward')}" in found[0].message


def test_the_copy_taken_apart_is_silent(snippet):
    script = snippet(CLONED)
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []


ROWS_KEPT = """
import torch
from torch import nn
torch.manual_seed(0)
weight = nn.Parameter(torch.randn(3, 4))
rows = list(weight)  # a list of the weight's rows, kept for a regulariser
opt = torch.optim.SGD([weight], lr=0.1)
x = torch.randn(8, 4)
for step in range(2):
    penalty = sum(torch.square(row).sum() for row in rows)  # <- used
    loss = (x @ weight.t()).pow(2).mean() + 1e-3 * penalty
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_views_used_after_their_base_was_stepped_are_told_without_the_tools_own_error(snippet):
    """The optimizer's step changes the weight in place; the next use of a row taken by iterating over it is refused
    in forward, where even `.is_leaf` of the row raises: the tool words it, it does not fail on it."""
    script = snippet(ROWS_KEPT)
    with trace() as traced, pytest.raises(RuntimeError, match="returns multiple views") as raised:
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    assert not any("could not explain" in note for note in getattr(raised.value, "__notes__", ()))
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("used"))]
    assert "changed in place since" in found[0].message and "list(weight)" in found[0].fix
