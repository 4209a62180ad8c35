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


FORWARD = """
from torch import nn


class Weighted(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.Linear(4, 3)

    def make(self, values):
        return values.requires_grad_(True) if LATER else torch.tensor(values.tolist(), requires_grad=True)

    def forward(self, h):
        weights = self.make(torch.rand(3))  # <- drawn
        terms = ((self.heads(h) - y) ** 2).mean(0)
        DERIVATIVE
        return (torch.softmax(weights, 0) * terms).sum()


model = Weighted()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for step in range(3):
    loss = model(x)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def test_loss_weights_made_anew_in_every_forward_are_named_at_the_forwards_line(snippet):
    """HiMol (b24b_himol): learnable loss weights drawn with requires_grad=True inside forward (through a helper) at
    every call: each gets a gradient, no optimizer holds any, none ever learns. Named at the forward's line."""
    script, found = optimizer_findings(snippet, FORWARD.replace("LATER", "False").replace("DERIVATIVE", "pass"))
    assert [(f.line, f.severity) for f in found] == [(script.line("drawn"), "warning")], found
    assert "at every call" in found[0].message and "nn.Parameter" in found[0].fix


def test_a_value_switched_to_requires_grad_in_forward_or_differentiated_there_is_no_weight(snippet):
    # requires_grad_() on a value the forward computed (enable_input_require_grads' hook), and a leaf the forward
    # differentiates with autograd.grad (a PINN's coordinates): inputs, not weights drawn anew
    script, found = optimizer_findings(snippet, FORWARD.replace("LATER", "True").replace("DERIVATIVE", "pass"))
    assert found == []
    derivative = "terms = terms + torch.autograd.grad(weights.pow(3).sum(), weights, create_graph=True)[0]"
    script, found = optimizer_findings(snippet, FORWARD.replace("LATER", "False").replace("DERIVATIVE", derivative))
    assert found == []


def test_a_canvas_made_like_an_activation_in_every_forward_is_no_weight(snippet):
    """davidmrau/mixture-of-experts (b40f_moe_gate_parameter_moved_in_init's fixed twin): the gates are scattered into
    ``torch.zeros_like(logits, requires_grad=True)`` at every call: a canvas shaped like the activation, not a weight
    drawn anew. The same leaf made from a shape alone is still named."""
    canvas = "weights = torch.zeros_like(self.heads(h)[0], requires_grad=True).scatter(0, torch.tensor([1]), 1.0)"
    script, found = optimizer_findings(snippet, FORWARD.replace("weights = self.make(torch.rand(3))", canvas)
                                       .replace("DERIVATIVE", "pass"))
    assert found == []
    shaped = canvas.replace("torch.zeros_like(self.heads(h)[0], ", "torch.zeros(3, ")
    script, found = optimizer_findings(snippet, FORWARD.replace("weights = self.make(torch.rand(3))", shaped)
                                       .replace("DERIVATIVE", "pass"))
    assert [(f.line, f.severity) for f in found] == [(script.line("drawn"), "warning")], found


def test_a_start_value_made_in_every_forward_that_terms_are_added_to_is_no_weight(snippet):
    """vector-quantize-pytorch (b41d_vqpytorch's twins): ``loss = torch.tensor([0.], requires_grad=self.training)`` in
    forward, the terms added to it: a start value, not a weight drawn anew."""
    start = "weights = torch.tensor([0.0], requires_grad=True)"
    code = FORWARD.replace("weights = self.make(torch.rand(3))", start).replace("DERIVATIVE", "pass")
    code = code.replace("return (torch.softmax(weights, 0) * terms).sum()", "return weights + terms.sum()")
    script, found = optimizer_findings(snippet, code)
    assert found == []


PROBED = """
probe = torch.zeros(4, 8, requires_grad=True)  # <- probe
print("loss at zero weights:", ((torch.tanh(x @ probe + b1) @ w2 - y) ** 2).mean().item())
opt = torch.optim.SGD([w1, b1, w2], lr=0.01)
for step in range(3):
    loss = ((torch.tanh(x @ w1 + b1) @ w2 - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
READ
"""


def test_a_leaf_made_to_evaluate_a_loss_at_chosen_values_is_silent_unless_its_gradient_is_read(snippet):
    """functorch #904 (b31a_functorch_regularizer_weights_plain_list): zero weights made with requires_grad=True to
    evaluate the loss there, never differentiated, while an optimizer trains the others, are no weights left out. Read
    ``.grad`` of it, and its gradient was wanted: it never took part in a loss."""
    script = snippet(PRELUDE + PROBED.replace("READ", ""))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
    script = snippet(PRELUDE + PROBED.replace("READ", "print(probe.grad)"))
    found = [(f.kind, f.line) for f in script.run().findings if f.severity == "error"]
    assert found == [("unused_parameter", script.line("probe"))], found
