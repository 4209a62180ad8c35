"""Weights kept as plain tensors (``w = torch.randn(..., requires_grad=True)``) and handed to an optimizer as a list:
one left out of that list gets gradients at every backward and never changes, and is named where the list was
built. A leaf whose gradient the script uses itself (an input it changes, or makes anew at every step) is no
such weight, nor is one the script updates by hand."""
from __future__ import annotations

PRELUDE = """
import torch
torch.manual_seed(0)
x, y = torch.randn(16, 4), torch.randn(16, 1)
w1 = torch.randn(4, 8, requires_grad=True)
b1 = torch.zeros(8, requires_grad=True)
w2 = torch.randn(8, 1, requires_grad=True)
"""


def optimizer_findings(snippet, code: str):
    script = snippet(PRELUDE + code)
    return script, [f for f in script.run().findings if f.kind == "optimizer"]


def test_a_weight_left_out_of_the_list_is_named_where_the_list_was_built(snippet):
    script, found = optimizer_findings(snippet, """
params = [w1, w2]  # <- built
opt = torch.optim.Adam(params, lr=0.01)
for step in range(3):
    loss = ((torch.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(b1.grad is not None)
""")
    assert [(f.tensor, f.line, f.severity) for f in found] == [("b1", script.line("built"), "warning")]
    assert "in no optimizer" in found[0].message


def test_the_same_weight_in_the_list_is_silent(snippet):
    script, found = optimizer_findings(snippet, """
opt = torch.optim.Adam([w1, b1, w2], lr=0.01)
for step in range(3):
    loss = ((torch.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""")
    assert found == []


def test_an_input_the_script_changes_with_its_gradient_is_silent(snippet):
    # an adversarial input: a plain leaf out of the optimizer, moved along its gradient by the script
    script, found = optimizer_findings(snippet, """
opt = torch.optim.SGD([w1, b1, w2], lr=0.01)
delta = torch.zeros(16, 4, requires_grad=True)
for step in range(3):
    loss = ((torch.tanh((x + delta) @ w1 + b1) @ w2 - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    with torch.no_grad():
        delta += 0.1 * delta.grad.sign()
        delta.grad.zero_()
    opt.step()
""")
    assert found == []


def test_a_weight_updated_by_hand_is_silent(snippet):
    script, found = optimizer_findings(snippet, """
opt = torch.optim.SGD([w1, w2], lr=0.01)
for step in range(3):
    loss = ((torch.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()
    opt.zero_grad()
    b1.grad = None
    loss.backward()
    opt.step()
    with torch.no_grad():
        b1 -= 0.01 * b1.grad
""")
    assert found == []


def test_a_leaf_reached_by_one_backward_only_is_silent(snippet):
    # a saliency map taken once, after training: its gradient is read, the leaf is no weight
    script, found = optimizer_findings(snippet, """
opt = torch.optim.SGD([w1, b1, w2], lr=0.01)
for step in range(3):
    loss = ((torch.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
image = x[:1].clone().requires_grad_()
(torch.tanh(image @ w1 + b1) @ w2).sum().backward()
print(image.grad.abs())
""")
    assert found == []
