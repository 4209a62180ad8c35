"""Watched tensors a custom autograd Function (a reentrant checkpoint too) uses in its forward without
taking them as inputs: autograd gives them no gradient through it. Named at the call, with a fix for the
case; silent where the tensors do get their gradient (inputs that require grad, use_reentrant=False, the
tensor passed to apply)."""
from __future__ import annotations

import textwrap

import pytest

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint
torch.manual_seed(0)
embed = nn.Embedding(10, 4).requires_grad_(False)
block, head = nn.Linear(4, 4), nn.Linear(4, 1)
opt = torch.optim.SGD([*block.parameters(), *head.parameters()], lr=0.1)
ids, y = torch.randint(0, 10, (8,)), torch.randn(8, 1)
"""


def run(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code))
    return script, script.run().findings


def loud(found):
    return [(f.kind, f.severity, f.line, f.tensor) for f in found if f.severity in ("error", "warning")]


def test_a_reentrant_checkpoint_on_inputs_without_grad_is_named_at_the_call(snippet):
    script, found = run(snippet, """
    for step in range(2):
        h = checkpoint(block, embed(ids), use_reentrant=True)  # <- call
        loss = F.mse_loss(head(h), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert {(kind, severity, line) for kind, severity, line, _ in loud(found)} == {("no_grad", "error", script.line("call"))}
    assert {f.tensor for f in found} == {"block.weight", "block.bias"}
    assert all("use_reentrant=False" in f.fix for f in found)


@pytest.mark.parametrize("call", [
    "checkpoint(block, embed(ids).requires_grad_(True), use_reentrant=True)",
    "checkpoint(block, embed(ids), use_reentrant=False)",
])
def test_a_checkpoint_whose_block_gets_its_gradient_is_silent(snippet, call):
    _, found = run(snippet, f"""
    for step in range(2):
        h = {call}
        loss = F.mse_loss(head(h), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """)
    assert loud(found) == []


SCALE = """
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, *weight):
        ctx.save_for_backward(x, *weight)
        return x * (weight[0] if weight else block.weight[0, 0])

    @staticmethod
    def backward(ctx, grad):
        x, *weight = ctx.saved_tensors
        w = weight[0] if weight else block.weight[0, 0].detach()
        return (grad * w, (grad * x).sum().reshape(1)) if weight else (grad * w,)
"""


def test_a_custom_function_that_uses_a_parameter_it_was_not_given_is_named(snippet):
    script, found = run(snippet, SCALE + """
gain = nn.Parameter(torch.ones(1))
opt.add_param_group({"params": [gain]})
for step in range(2):
    h = Scale.apply(head(embed(ids)))  # <- call
    loss = F.mse_loss(h * gain, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
""")
    cut = [f for f in found if f.kind == "no_grad"]
    assert {(f.line, f.tensor) for f in cut} == {(script.line("call"), "block.weight")}
    assert "autograd gives gradients through a Function only to its inputs" in cut[0].message


def test_a_custom_function_given_the_parameter_is_silent(snippet):
    _, found = run(snippet, SCALE + """
scale = nn.Parameter(torch.ones(1))
opt2 = torch.optim.SGD([*head.parameters(), scale], lr=0.1)
for step in range(2):
    h = Scale.apply(head(embed(ids)), scale)
    loss = F.mse_loss(h, y)
    opt2.zero_grad()
    loss.backward()
    opt2.step()
""")
    assert [f for f in loud(found) if f[3] not in ("block.weight", "block.bias")] == []
