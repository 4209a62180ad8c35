"""An old-style autograd.Function (``forward`` and ``backward`` as instance methods, state set in ``__init__``: the
gradient reversal layers of older domain-adaptation code) called as an instance, ``GradReverse(lambd)(x)``: PyTorch
refuses to run it. The refusal is an ``autograd_error`` at the line that called the instance, with the fix of the
static form and ``.apply``; that form trains silently."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

OLD = """
import torch
from torch import nn
from torch.autograd import Function
torch.manual_seed(0)


class GradReverse(Function):
    def __init__(self, lambd):
        self.lambd = lambd

    def forward(self, x):
        return x.view_as(x)

    def backward(self, grad_output):
        return -self.lambd * grad_output


def grad_reverse(x, lambd=1.0):
    return GradReverse(lambd)(x)  # <- call


features, domain = nn.Linear(4, 8), nn.Linear(8, 2)
optimizer = torch.optim.SGD([*features.parameters(), *domain.parameters()], lr=0.1)
x, y = torch.randn(6, 4), torch.randint(0, 2, (6,))
loss = nn.functional.cross_entropy(domain(grad_reverse(features(x))), y)
loss.backward()
optimizer.step()
"""
NEW = OLD.replace('''    def __init__(self, lambd):
        self.lambd = lambd

    def forward(self, x):
        return x.view_as(x)

    def backward(self, grad_output):
        return -self.lambd * grad_output''', '''    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return -ctx.lambd * grad_output, None''').replace("GradReverse(lambd)(x)", "GradReverse.apply(x, lambd)")


def test_the_call_of_an_old_style_function_is_named(snippet):
    script = snippet(OLD)
    with trace() as traced, pytest.raises(RuntimeError, match="Legacy autograd function"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("call"))]
    assert "GradReverse.apply(" in found[0].fix


def test_the_static_form_is_silent(snippet):
    script = snippet(NEW)
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
