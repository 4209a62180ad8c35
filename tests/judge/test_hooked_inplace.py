"""A module with a full backward hook (Opacus, Captum, a script's own ``register_full_backward_hook``) hands its output
on as a view of torch's BackwardHookFunction; an ``nn.ReLU(inplace=True)`` after it writes into that view, and PyTorch
refuses the write in the forward. Named at the line that made the ReLU write in place; the twin built with
``inplace=False`` is silent."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

HOOKED = """
import torch
from torch import nn
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.GroupNorm(2, 4)
        self.relu = nn.ReLU(inplace=True)  # <- inplace

    def forward(self, x):
        return self.relu(self.norm(x))  # <- write


block = Block()
block.norm.register_full_backward_hook(lambda module, grad_in, grad_out: None)
out = block(torch.randn(3, 4, 5, requires_grad=True))
out.sum().backward()
"""


def test_the_in_place_layer_after_a_hooked_module_is_named_where_it_was_made(snippet):
    script = snippet(HOOKED)
    with trace() as traced, pytest.raises(RuntimeError, match="BackwardHookFunction"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("inplace"))]
    assert "inplace=False" in found[0].fix and "backward hook" in found[0].message


def test_the_layer_writing_out_of_place_is_silent(snippet):
    script = snippet(HOOKED.replace("inplace=True", "inplace=False"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
