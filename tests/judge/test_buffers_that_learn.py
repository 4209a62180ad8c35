"""A tensor that requires grad registered with ``register_buffer`` (a Parameter handed to it) is no parameter:
``parameters()`` and the optimizer built from it miss it, so it gets gradients and never learns. Named at the
``register_buffer`` call; a buffer the script hands to an optimizer itself, or asks autograd.grad for the gradient
of, or one without grad, is silent. A `.grad` read alone does not silence it: a printed gradient is how such a
buffer's users find it has one."""
from __future__ import annotations

import pytest

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


HAND = """
import torch
from torch import nn
torch.manual_seed(0)


class Blur(nn.Module):
    def __init__(self, kernel):
        super().__init__()
        self.register_buffer("kernel", kernel)

    def forward(self, x):
        return x * self.kernel


kernel = torch.rand(4).requires_grad_()
model = Blur(kernel)
x, y = torch.randn(8, 4), torch.randn(8, 4)
for step in range(3):
    loss = ((model(x) - y) ** 2).mean()
    {update}
"""


def test_a_buffer_the_script_learns_by_hand_is_silent(snippet):
    """Estimated by the script itself (blind deblurring's kernel): its gradient asked of autograd.grad, and written
    in place under no_grad. It learns, so nothing is told."""
    script = snippet(HAND.format(update="(grad,) = torch.autograd.grad(loss, kernel)\n    with torch.no_grad():\n"
                                        "        kernel -= 0.1 * grad"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []


@pytest.mark.parametrize("update", ["loss.backward()", "loss.backward()\n    print(kernel.grad)"])
def test_a_buffer_given_a_gradient_by_backward_is_still_named(snippet, update):
    script = snippet(HAND.format(update=update))
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.tensor) for f in found] == [("non_parameter_tensor", "Blur.kernel")]


def test_a_buffer_whose_gradient_the_script_reads_is_named_at_register_buffer(snippet):
    """vector-quantize-pytorch #12 (b41d_vqpytorch): a codebook kept with ``register_buffer`` that a penalty is meant
    to train; the script reads its ``.grad`` and finds None. Named at the ``register_buffer`` call, the read as symptom;
    without the read (a buffer used as a constant) it stays silent, as above."""
    script = snippet(CODE.format(factor="torch.tensor(2.0)", params="model.parameters()")
                     + "print(model.factor.grad)  # <- read\n")
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line, f.tensor) for f in found] == [("non_parameter_tensor", script.line("buffer"),
                                                            "Scale.factor")]
    assert "register_buffer" in found[0].message
    assert ("symptom", script.line("read")) in {(p.role, p.line) for p in found[0].related}
