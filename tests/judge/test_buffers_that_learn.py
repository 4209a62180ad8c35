"""A tensor that requires grad registered with ``register_buffer`` (a Parameter handed to it) is no parameter:
``parameters()`` and the optimizer built from it miss it, so it gets gradients and never learns. Named at the
``register_buffer`` call; a buffer the script hands to an optimizer itself, or one without grad, is silent."""
from __future__ import annotations

CODE = """
import torch
from torch import nn
torch.manual_seed(0)


class Scale(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.register_buffer("factor", torch.as_tensor(factor))  # <- buffer
        self.linear = nn.Linear(4, 1)

    def forward(self, x):
        return self.linear(x) * self.factor


model = Scale({factor})
opt = torch.optim.SGD({params}, lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
for step in range(3):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def non_parameter(snippet, factor: str, params: str = "model.parameters()"):
    script = snippet(CODE.format(factor=factor, params=params))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_parameter_registered_as_a_buffer_is_named_at_register_buffer(snippet):
    script, found = non_parameter(snippet, "nn.Parameter(torch.tensor(2.0))")
    assert [(f.kind, f.line, f.tensor) for f in found] == [("non_parameter_tensor", script.line("buffer"),
                                                            "Scale.factor")]
    assert "register_buffer" in found[0].message and "register_parameter('factor'" in found[0].fix


def test_a_buffer_without_grad_is_silent(snippet):
    _, found = non_parameter(snippet, "torch.tensor(2.0)")
    assert found == []


def test_a_buffer_the_script_hands_to_its_optimizer_is_silent(snippet):
    _, found = non_parameter(snippet, "nn.Parameter(torch.tensor(2.0))", "[*model.parameters(), model.factor]")
    assert found == []
