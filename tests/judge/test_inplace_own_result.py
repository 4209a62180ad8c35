"""An in-place op that saves its own result (``sigmoid_``, ``relu_``) applied to a view of a tensor, and a write
after it into another part of that tensor (``y[:, 0::3] = ...``): the write leaves the saved values alone but moves
the version counter the view shares with its base, and backward fails. The `inplace_saved` error is named at the
in-place op, the write as `used`. A write into the saved tensor itself (``x = relu_(x); x += r``) stays named at the
write, as before."""
from __future__ import annotations

CODE = """
import torch

torch.manual_seed(0)
w = torch.randn(6, 6, requires_grad=True)
x = torch.randn(4, 6)
y = (x @ w).clone()
{activation}  # <- activation
y[:, 0::3] = y[:, 0::3] * 2.0  # <- write
loss = y.sum()
try:
    loss.backward()  # <- backward
except RuntimeError as error:
    print("refused:", error)
"""


def errors(snippet, activation: str):
    script = snippet(CODE.format(activation=activation))
    return script, [f for f in script.run().findings if f.severity == "error"]


def test_the_in_place_op_on_a_view_that_saved_its_result_is_named(snippet):
    script, found = errors(snippet, "y[:, 2::3].sigmoid_()")
    assert [(f.kind, f.line) for f in found] == [("inplace_saved", script.line("activation"))]
    assert "sigmoid_" in found[0].message and "y[...] = y[...].sigmoid()" in found[0].fix
    related = {(p.role, p.line) for p in found[0].related}
    assert {("used", script.line("write")), ("symptom", script.line("backward"))} <= related


def test_a_write_into_the_saved_result_itself_is_named_at_the_write(snippet):
    script, found = errors(snippet, "y = y.relu_()\ny += 1.0  # <- into")
    assert [(f.kind, f.line) for f in found] == [("inplace_saved", script.line("into"))]


def test_the_out_of_place_form_is_silent(snippet):
    assert errors(snippet, "y[:, 2::3] = y[:, 2::3].sigmoid()")[1] == []
