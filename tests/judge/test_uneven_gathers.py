"""Gradients gathered one backward at a time (one per loss term: PCGrad, MGDA, ConFIG) from every parameter of a
network, skipping a ``.grad`` found None: a parameter only some of the terms use (a PDE coefficient, a task's head)
leaves the vectors of the other terms shorter by its size, and the script dies on that (``torch.stack``). The tool
names that parameter where it is made, with the read that found its gradient None as the symptom; gathering a zero
for it is silent, and so is a size error whose sizes do not differ by that parameter's."""
from __future__ import annotations


PER_TERM = """
import torch
from torch import nn
torch.manual_seed(0)


class Solver(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Linear(8, 1))
        self.coefficient = nn.Parameter(torch.tensor([0.1]))  # <- made

    def forward(self, x):
        return self.body(x)


def gathered(model):
    with torch.no_grad():
        pieces = []
        for p in model.parameters():
            if p.grad is None:  # <- read
                continue
            pieces.append(p.grad.view(-1))
        return torch.cat(pieces)


model = Solver()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
x = torch.randn(16, 2)
for step in range(2):
    vectors = []
    for term in ("data", "physics"):
        optimizer.zero_grad()
        u = model(x)
        loss = u.pow(2).mean() if term == "data" else (u * model.coefficient).pow(2).mean()
        loss.backward()
        vectors.append(gathered(model))
    direction = torch.stack(vectors).mean(0)  # <- stacked
    optimizer.step()
"""
ZERO_FILLED = PER_TERM.replace("""            if p.grad is None:  # <- read
                continue
            pieces.append(p.grad.view(-1))""", """            grad = torch.zeros_like(p) if p.grad is None else p.grad
            pieces.append(grad.view(-1))""")
# a size error of the script's own (three values cut off), which the coefficient's one missing value does not explain
UNRELATED = PER_TERM.replace("    direction = torch.stack(vectors).mean(0)  # <- stacked",
                             "    direction = torch.stack([vectors[0], vectors[0][:-3]]).mean(0)")


def _raising(script):
    """The errors and warnings of ``script``, which dies on a size."""
    return [f for f in script.raising(RuntimeError, "size").findings if f.severity in ("error", "warning")]


def test_a_parameter_only_one_term_uses_is_named_where_it_is_made(snippet):
    script = snippet(PER_TERM)
    found = _raising(script)
    assert [(f.kind, f.severity, f.tensor, f.line) for f in found] == [
        ("unused_parameter", "error", "Solver.coefficient", script.line("made"))]
    assert [(r.role, r.line) for r in found[0].related] == [("symptom", script.line("read"))]
    assert "did not reach Solver.coefficient" in found[0].message and "equal size" in found[0].message
    assert "torch.zeros_like(p)" in found[0].fix


def test_gathering_a_zero_for_it_is_silent(snippet):
    assert [f for f in snippet(ZERO_FILLED).run().findings if f.severity in ("error", "warning")] == []


def test_a_size_error_no_skipped_read_explains_is_not_blamed_on_it(snippet):
    assert _raising(snippet(UNRELATED)) == []
