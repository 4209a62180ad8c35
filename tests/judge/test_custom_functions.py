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


GATED = """
class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, factor, h, w):
        flat = h.reshape(-1, h.size(-1))  # a copy of the non-contiguous input, made with gradients off
        ctx.save_for_backward(flat, w)
        ctx.shape = h.shape
        return (flat @ w * factor).view(*h.shape[:-1], w.size(1))

    @staticmethod
    def backward(ctx, grad):
        flat, w = ctx.saved_tensors
        dh = (grad.reshape(-1, grad.size(-1)) @ w.t()).view(ctx.shape) if TEST else None  # <- gate
        dw = flat.t() @ grad.reshape(-1, grad.size(-1)) if ctx.needs_input_grad[2] else None
        return None, dh, dw


w = nn.Parameter(torch.randn(4, 4))
opt.add_param_group({"params": [w]})
for step in range(2):
    h = block(embed(ids).unsqueeze(1).expand(8, 3, 4))[:, 1:]
    loss = F.mse_loss(head(Scale.apply(2.0, h, w)).mean(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_a_custom_backward_that_tests_a_saved_copy_s_requires_grad_is_named_at_the_test(snippet):
    """VeOmni #1017 (b31c_veomni_chunk_logprobs_dhidden_gated_on_copy): the backward returns None for the input
    unless the copy its forward saved requires grad, which a copy made in forward never does."""
    script, found = run(snippet, GATED.replace("TEST", "flat.requires_grad"))
    assert {(kind, line) for kind, _, line, _ in loud(found)} == {("non_differentiable", script.line("gate"))}, \
        loud(found)
    assert "ctx.needs_input_grad[1]" in found[0].fix and "flat.requires_grad" in found[0].fix  # after the number
    script, found = run(snippet, GATED.replace("TEST", "ctx.needs_input_grad[1]"))
    assert loud(found) == []
