"""A gradient taken with ``create_graph=True`` through a custom Function whose backward is ``@once_differentiable`` (a
hash-grid encoding's), then used in the loss (an SDF's surface normal): the loss's backward raises "trying to
differentiate twice". The finding is that ``autograd.grad`` call, with the backward as symptom, and the parameters in
the refused backward's graph are not reported as never having taken part in a loss; with the encoding's backward
written in differentiable ops the run is silent."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

CODE = """
import torch
from torch import nn
from torch.autograd.function import once_differentiable
torch.manual_seed(0)


class Encode(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        ctx.save_for_backward(x, weight)
        return torch.sin(x @ weight)

    @staticmethod
    {decorator}
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        g = grad * torch.cos(x @ weight)
        return g @ weight.t(), x.t() @ g


weight = nn.Parameter(torch.randn(3, 8))
head = nn.Linear(8, 1)
optimizer = torch.optim.Adam([weight, *head.parameters()], lr=1e-3)
for step in range(2):
    x = torch.rand(16, 3, requires_grad=True)
    sdf = head(Encode.apply(x, weight))
    normal, = torch.autograd.grad(sdf.sum(), x, create_graph=True)  # <- grad
    loss = ((normal.norm(dim=-1) - 1) ** 2).mean() + sdf.abs().mean()
    optimizer.zero_grad()
    loss.backward()  # <- backward
    optimizer.step()
"""


def test_the_derivative_through_the_function_is_named(snippet):
    script = snippet(CODE.format(decorator="@once_differentiable"))
    with trace() as traced, pytest.raises(RuntimeError, match="once_differentiable"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("grad"))]
    assert any(r.role == "symptom" and r.line == script.line("backward") for r in found[0].related)
    assert "@once_differentiable" in found[0].message


def test_a_differentiable_backward_is_silent(snippet):
    script = snippet(CODE.format(decorator=""))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
