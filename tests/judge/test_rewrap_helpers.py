"""A user's helper that only converts what it is given (``def as_tensor(d): return torch.as_tensor(d)``) is right for
the numbers it is meant for: a loss rebuilt through it from a tensor with history is named at the line that handed
the tensor over. A function that rewraps and then computes with the copy is where the fix goes, and is named."""
from __future__ import annotations

import textwrap

PRELUDE = """
import torch
from torch import nn
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randn(8, 1)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""


def rewrap_lines(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code))
    found = script.run().findings
    return script, {f.line for f in found if f.kind == "tensor_rewrap"}


def test_a_helper_that_only_converts_is_named_where_it_was_handed_the_loss(snippet):
    script, lines = rewrap_lines(snippet, """
    def as_tensor(data, dtype=torch.float32):
        return torch.as_tensor(data, dtype=dtype)

    for step in range(2):
        out = model(x)
        losses = as_tensor([((out - y) ** 2).mean(), out.abs().mean()])  # <- handed
        loss = losses.sum().requires_grad_(True)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert lines == {script.line("handed")}


def test_a_helper_that_rewraps_then_computes_is_named_itself(snippet):
    script, lines = rewrap_lines(snippet, """
    def mse(out, target):
        out = torch.tensor(out, requires_grad=True)  # <- rewrapped
        return ((out - target) ** 2).mean()

    for step in range(2):
        loss = mse(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert lines == {script.line("rewrapped")}
