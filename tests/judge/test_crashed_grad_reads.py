"""A script that dies on a ``.grad`` it read as None: a hand-written loop over a model's parameters reading the gradient
of one that does not require grad (a pruning mask kept as a frozen Parameter, a layer the script froze) or of one the
loss never uses, or a gradient zeroed by hand before the first backward gave one. The tool names the line that read
it, says which tensor had no gradient and why, and how to avoid it. A loop that skips the None, or only logs, is
silent, and so is a crash elsewhere."""
from __future__ import annotations

import pytest


MASKED_SGD = """
import torch
from torch import nn
torch.manual_seed(0)


class MaskedLinear(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(mask.shape) * 0.1)
        self.mask = nn.Parameter(mask, requires_grad=False)  # <- made

    def forward(self, x):
        return x @ (self.weight * self.mask).t()


model = MaskedLinear((torch.rand(3, 4) > 0.5).float())
x, y = torch.randn(8, 4), torch.randn(8, 3)
for epoch in range(2):
    loss = (model(x) - y).pow(2).mean()
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= 0.1 * param.grad  # <- update
"""
SKIPPING = MASKED_SGD.replace("            param -= 0.1 * param.grad  # <- update",
                              "            if param.grad is not None:\n                param -= 0.1 * param.grad")

FROZEN_CLIP = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
model[0].requires_grad_(False)  # fine-tune the head only
optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
x, y = torch.randn(16, 4), torch.randint(0, 2, (16,))
loss = nn.functional.cross_entropy(model(x), y)
loss.backward()
for p in model.parameters():
    p.grad.data.clamp_(-1, 1)  # <- clip
optimizer.step()
"""
LOGGING = FROZEN_CLIP.replace("    p.grad.data.clamp_(-1, 1)  # <- clip",
                              "    print(None if p.grad is None else p.grad.norm().item())")


def _run(script, raises):
    """The errors and warnings of ``script``, which dies on a None."""
    return [f for f in script.raising(raises, "NoneType").findings if f.severity in ("error", "warning")]


def test_an_update_loop_dying_on_a_frozen_mask_is_named_at_the_loop(snippet):
    script = snippet(MASKED_SGD)
    found = _run(script, TypeError)
    assert [(f.kind, f.severity, f.line) for f in found] == [("optimizer", "warning", script.line("update"))]
    assert [(r.role, r.line) for r in found[0].related] == [("defined", script.line("made"))]
    assert "requires_grad=False" in found[0].message and "p.grad is None" in found[0].fix


def test_a_clipping_loop_dying_on_a_frozen_layer_names_the_layer(snippet):
    script = snippet(FROZEN_CLIP)
    found = _run(script, AttributeError)
    assert [(f.kind, f.line) for f in found] == [("optimizer", script.line("clip"))]
    assert found[0].tensor.endswith(".weight") and "frozen" in found[0].message


@pytest.mark.parametrize("source", [SKIPPING, LOGGING], ids=["skips frozen", "only logs"])
def test_loops_that_survive_the_none_are_silent(snippet, source):
    assert [f for f in snippet(source).run().findings if f.severity in ("error", "warning")] == []


def test_a_crash_elsewhere_is_not_blamed_on_the_read(snippet):
    script = snippet(MASKED_SGD.replace("param -= 0.1 * param.grad  # <- update",
                                        "param -= 0.1 * (param.grad if param.grad is not None else 0)\n"
                                        "            None + param  # <- elsewhere"))
    assert _run(script, TypeError) == []


ZEROED_FIRST = """
import torch
torch.manual_seed(0)
x, y = torch.randn(16, 5), torch.randn(16, 2)
w1 = torch.randn(5, 8, requires_grad=True)
w2 = torch.randn(8, 2, requires_grad=True)
for t in range(5):
    w1.grad.data.zero_()  # <- zeroed
    w2.grad.data.zero_()
    loss = (x.mm(w1).clamp(min=0).mm(w2) - y).pow(2).sum()
    loss.backward()
    w1.data -= 1e-4 * w1.grad.data
    w2.data -= 1e-4 * w2.grad.data
"""
ZEROED_AFTER = """
import torch
torch.manual_seed(0)
x, y = torch.randn(16, 5), torch.randn(16, 2)
w1 = torch.randn(5, 8, requires_grad=True)
w2 = torch.randn(8, 2, requires_grad=True)
for t in range(5):
    loss = (x.mm(w1).clamp(min=0).mm(w2) - y).pow(2).sum()
    loss.backward()
    w1.data -= 1e-4 * w1.grad.data
    w2.data -= 1e-4 * w2.grad.data
    w1.grad.data.zero_()
    w2.grad.data.zero_()
"""

UNUSED_CLIPPED = """
import torch
from torch import nn
torch.manual_seed(0)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 8, batch_first=True)
        self.attention = nn.Linear(8, 8)  # <- unused
        self.out = nn.Linear(8, 3)

    def forward(self, x):
        return self.out(self.rnn(x)[0][:, -1])


model = Tagger()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loss = nn.functional.cross_entropy(model(torch.randn(6, 5, 4)), torch.randint(0, 3, (6,)))
loss.backward()
norm = sum(p.grad.data.norm() ** 2 for p in model.parameters())  # <- clip
optimizer.step()
"""


def test_a_gradient_zeroed_before_the_first_backward_is_named_at_the_read(snippet):
    script = snippet(ZEROED_FIRST)
    found = _run(script, AttributeError)
    assert [(f.kind, f.severity, f.tensor, f.line) for f in found] == [("optimizer", "error", "w1",
                                                                         script.line("zeroed"))]
    assert "no backward had run yet" in found[0].message and "after loss.backward()" in found[0].fix


def test_gradients_zeroed_after_the_update_are_silent(snippet):
    assert [f for f in snippet(ZEROED_AFTER).run().findings if f.severity in ("error", "warning")] == []


def test_a_clipping_loop_dying_on_an_unused_layer_is_named_beside_the_layer(snippet):
    script = snippet(UNUSED_CLIPPED)
    found = _run(script, AttributeError)
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("unused")),
                                                 ("optimizer", script.line("clip"))}
    crash = next(f for f in found if f.kind == "optimizer")
    assert crash.tensor.startswith("Tagger.attention.") and "none of the 1 backwards" in crash.message

CUT_INPUT = """
import torch
from torch import nn
torch.manual_seed(0)
model = nn.Linear(6, 2)
x = torch.rand(4, 6, requires_grad=True)
spikes = (torch.rand(4, 6) < x).float()  # <- cut
loss = nn.functional.cross_entropy(model(spikes), torch.randint(0, 2, (4,)))
loss.backward()
x_adv = x + 0.1 * x.grad.sign()  # <- attack
"""


def test_a_crash_on_a_gradient_a_cut_kept_away_is_the_cut_s_symptom(snippet):
    script = snippet(CUT_INPUT)
    found = _run(script, AttributeError)
    assert [(f.kind, f.line) for f in found] == [("non_differentiable", script.line("cut"))]
    assert any(r.role == "symptom" and r.line == script.line("attack") for r in found[0].related)
