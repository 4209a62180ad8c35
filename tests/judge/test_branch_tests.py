"""A weight tested against a value it starts at, in a branch that swaps in a default when the test holds
(``if bool(torch.norm(betas) == 0): use the stored template``): the test carries no gradient, the branch drops the
weight from the loss, and its gradient arrives exactly zero at every step. The `non_differentiable` error is named at
the test; testing whether the weight was given (``is None``) is silent, and so is a test of a loss that every
weight learns from (``if loss < best:``), which explains no weight's zeros."""
from __future__ import annotations

CODE = """
import torch
from torch import nn

torch.manual_seed(0)


class Body(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("template", torch.randn(1, 4))
        self.dirs = torch.randn(4, 4)

    def forward(self, shape):
        if {test}:  # <- test
            return self.template @ self.dirs
        return shape @ self.dirs


body = Body()
shape = nn.Parameter(torch.zeros(1, 4))
offset = nn.Parameter(torch.zeros(1, 4))
target = torch.randn(1, 4)
opt = torch.optim.Adam([shape, offset], lr=0.1)
best = float("inf")
for step in range(4):
    opt.zero_grad()
    loss = (body(shape) + offset - target).pow(2).mean() + shape.pow(2).mean()
    if loss < best:
        best = loss.item()
    loss.backward()
    print(shape.grad.abs().sum().item())  # <- read
    opt.step()
"""


def problems(snippet, test: str):
    script = snippet(CODE.format(test=test))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_test_of_the_weights_own_values_is_named_when_its_gradient_stays_zero(snippet):
    script, found = problems(snippet, "shape is None or bool(torch.norm(shape) == 0)")
    assert [(f.kind, f.line) for f in found] == [("non_differentiable", script.line("test"))]
    assert "`==` turns a value computed from shape into a single bool that the code then tests" in found[0].message
    assert "torch.where" in found[0].fix
    assert any(r.role == "symptom" and r.line == script.line("read") for r in found[0].related)


def test_testing_whether_the_weight_was_given_is_silent(snippet):
    assert problems(snippet, "shape is None")[1] == []
