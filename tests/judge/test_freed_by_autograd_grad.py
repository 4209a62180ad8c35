"""Forces taken inside a forward with ``torch.autograd.grad(energy, xyz)`` and no ``retain_graph``: that call frees the
energy's graph, and a loss that also uses the energy fails at its backward ("backward through the graph a second
time"). Named at the ``autograd.grad`` call, the line to change; with ``retain_graph=True, create_graph=True`` the
attack trains silently."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

CODE = """
import torch
from torch import nn
torch.manual_seed(0)


class Potential(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, xyz):
        r = (xyz[1:] - xyz[:-1]).norm(dim=-1, keepdim=True)
        energy = self.net(r).sum()
        forces, = torch.autograd.grad(energy, xyz{flags})  # <- grad
        return energy, forces


model = Potential()
delta = torch.zeros(4, 3, requires_grad=True)
optimizer = torch.optim.Adam([delta], lr=1e-2)
for step in range(2):
    xyz = torch.randn(4, 3) + delta
    energy, forces = model(xyz)
    loss = -forces.pow(2).sum() * torch.exp(-energy)
    optimizer.zero_grad()
    loss.backward()  # <- backward
    optimizer.step()
"""


def test_the_autograd_grad_call_that_freed_the_graph_is_named(snippet):
    script = snippet(CODE.format(flags=""))
    with trace() as traced, pytest.raises(RuntimeError, match="backward through the graph a second time"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    errors = [f for f in traced.findings if f.kind == "autograd_error"]
    assert [(f.line, f.severity) for f in errors] == [(script.line("grad"), "error")]
    assert "ran without retain_graph=True" in errors[0].message and "retain_graph=True" in errors[0].fix
    assert any(r.role == "symptom" and r.line == script.line("backward") for r in errors[0].related)


def test_retaining_and_differentiating_the_forces_is_silent(snippet):
    script = snippet(CODE.format(flags=", retain_graph=True, create_graph=True"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
