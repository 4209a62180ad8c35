"""A backward refused inside ``torch.inference_mode()`` whose block the code entered through a context chosen
earlier (``context = torch.inference_mode() if ... else torch.no_grad()``; ``with context:``), which no line's text
shows: the run remembers the line that entered it, and the `no_grad` finding is named there; the same loop under
``torch.no_grad()``, which ``enable_grad()`` turns back on, is silent. The wrapped ``__enter__``/``__exit__`` are
torch's own again after the trace."""
from __future__ import annotations

import torch

CODE = """
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(3, 1)


def energy_and_forces(pos):
    with torch.enable_grad():
        pos.requires_grad_(True)
        energy = model(pos).sum()
        forces = torch.autograd.grad(energy, pos)[0]  # <- grad
    return energy, forces


class Tester:
    def __init__(self, inference):
        self.inference = inference

    def test(self, batches):
        context = torch.inference_mode() if self.inference else torch.no_grad()
        with context:  # <- entered
            for pos in batches:
                try:
                    print(energy_and_forces(pos)[1].sum().item())
                except RuntimeError as error:
                    print("test batch failed:", error)


Tester({inference}).test([torch.randn(4, 3) for _ in range(2)])
"""


def test_a_refusal_inside_a_block_entered_through_a_variable_is_named_where_it_was_entered(snippet):
    script = snippet(CODE.format(inference=True))
    found = [f for f in script.run().findings if f.severity == "error"]
    assert [(f.kind, f.line) for f in found] == [("no_grad", script.line("entered"))]
    assert "entered torch.inference_mode()" in found[0].message and "torch.no_grad()" in found[0].fix
    assert any(r.role == "symptom" and r.line == script.line("grad") for r in found[0].related)


def test_the_same_loop_under_no_grad_is_silent(snippet):
    script = snippet(CODE.format(inference=False))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []


def test_inference_mode_is_torchs_own_after_the_trace(snippet):
    enter, leave = torch.inference_mode.__dict__["__enter__"], torch.inference_mode.__dict__["__exit__"]
    snippet(CODE.format(inference=True)).run()
    assert torch.inference_mode.__dict__["__enter__"] is enter and torch.inference_mode.__dict__["__exit__"] is leave
