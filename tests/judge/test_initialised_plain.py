"""A module of a trained model that holds a plain tensor fresh from ``torch.zeros``/``randn`` (not a Parameter,
not a buffer), that its own forward uses as a weight and nothing ever wrote, is a weight meant to learn: named
where it was assigned. Constants, buffers, running statistics written in place, inputs kept on a module (fixed
noise for samples) and models no optimizer trains stay silent."""
from __future__ import annotations

import pytest

MODEL = """
import torch
from torch import nn
torch.manual_seed(0)

class Shifted(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.proj = nn.Linear(n, n)
        {attribute}

    def forward(self, x):
        {use}
        return self.proj(x) * self.scale + self.offset

net = Shifted(4)
a, b = torch.randn(6, 4), torch.randn(6, 4)
"""

TRAIN = """
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(2):
    opt.zero_grad()
    ((net(a) - b) ** 2).mean().backward()
    opt.step()
"""

EVALUATE = """
net.requires_grad_(False)
print(((net(a) - b) ** 2).mean().item())
"""


def _findings(snippet, attribute: str, use: str = "pass", loop: str = TRAIN):
    script = snippet(MODEL.format(attribute=attribute, use=use) + loop)
    return script, [f for f in script.run().findings if f.kind == "non_parameter_tensor"]


def test_a_fresh_plain_weight_is_named_where_it_was_assigned(snippet):
    script, found = _findings(snippet, "self.scale = torch.randn(n)  # <- made\n        self.offset = 0.0")
    assert [(f.severity, f.line, f.tensor) for f in found] == [("error", script.line("made"), "Shifted.scale")]
    assert "nn.Parameter" in found[0].fix


def test_a_weight_used_through_a_view_is_named(snippet):
    script, found = _findings(snippet, "self.scale = 1.0\n        self.offset = torch.zeros(1, n)  # <- made",
                              use="x = x + self.offset.t().t()")
    assert [(f.line, f.tensor) for f in found] == [(script.line("made"), "Shifted.offset")]


@pytest.mark.parametrize("attribute, use", [
    ("self.scale = torch.ones(n)\n        self.offset = 0.0", "pass"),  # a constant factory: a mask, a scale
    ("self.register_buffer('scale', torch.randn(n))\n        self.offset = 0.0", "pass"),  # registered
    ("self.scale = 2.0\n        self.offset = torch.zeros(n)", "self.offset.add_(x.mean(0).detach())"),  # written
    ("self.scale = torch.randn(n) * 3\n        self.offset = 0.0", "pass"),  # computed from the draw
])
def test_constants_buffers_and_running_statistics_are_silent(snippet, attribute, use):
    assert _findings(snippet, attribute, use)[1] == []


def test_fixed_noise_kept_on_the_module_and_fed_to_it_is_silent(snippet):
    attribute = "self.scale = 1.0\n        self.offset = 0.0\n        self.z = torch.randn(3, n)"
    assert _findings(snippet, attribute, loop=TRAIN + "print(net(net.z).sum().item())\n")[1] == []


def test_a_model_no_optimizer_trains_is_silent(snippet):
    assert _findings(snippet, "self.scale = torch.randn(n)\n        self.offset = 0.0", loop=EVALUATE)[1] == []
