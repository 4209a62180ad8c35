"""A parameter the script froze (a freezing loop's condition or a name filter that caught a layer inside a block that
trains) or made with ``requires_grad=False``, whose ``.grad`` it then reads by name, finding None: a `no_update`
warning at the freeze, the read as symptom. Silent where the freeze is how fine-tuning goes: a whole block frozen, a
tensor frozen in its module's constructor, a layer trained before it was frozen, or a read of every parameter in a
loop, which names none of them."""
from __future__ import annotations

import pytest

CODE = """
import torch
from torch import nn
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.out = nn.Linear(4, 1)

    def forward(self, x):
        return self.out(self.norm(self.conv(x)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Block()
        self.head = nn.Linear(1, 1)
{init}
    def forward(self, x):
        return self.head(self.body(x))


model = Net()
for name, param in model.named_parameters():
    if {frozen}:
        param.requires_grad = False  # <- freeze
opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
for step in range(3):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
{read}
"""
NAMED = 'print(model.body.norm.weight.grad)  # <- read'
LOOP = 'print([p.grad is None for p in model.parameters()])'


def frozen(snippet, condition: str, read: str = NAMED, init: str = ""):
    script = snippet(CODE.format(frozen=condition, read=read, init=init))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_layer_frozen_inside_a_training_block_and_read_by_name_is_named_at_the_freeze(snippet):
    script, found = frozen(snippet, '"norm" in name')
    assert [(f.kind, f.severity, f.line, f.tensor) for f in found] == [
        ("no_update", "warning", script.line("freeze"), "model.body.norm.weight")]
    assert ("symptom", script.line("read")) in {(p.role, p.line) for p in found[0].related}
    assert "requires_grad_(True)" in found[0].fix


def test_the_summary_counts_a_frozen_parameter_read_by_name_as_without_gradient(snippet):
    """The script saw None: the summary must not say that every tensor got a gradient beside that finding."""
    script = snippet(CODE.format(frozen='"norm" in name', read=NAMED, init=""))
    trace = script.run()
    missing = [(w.name, w.got_grad) for w in trace.watched if not w.got_grad]
    assert missing == [("model.body.norm.weight", False)]
    assert sum(1 for w in trace.watched if w.got_grad) == 6  # the others; the frozen norm bias, never read, stays out


def test_a_read_of_every_parameter_in_a_loop_names_none_of_them(snippet):
    _, found = frozen(snippet, '"norm" in name', read=LOOP)
    assert found == []


@pytest.mark.parametrize("read", ["blocks = [model.body]\nprint(blocks[0].norm.weight.grad)",
                                  "print(model._modules['body'].norm.weight.grad)",
                                  "layers = {'norm': model.body.norm}\nprint(layers['norm'].weight.grad)"])
def test_a_read_through_items_by_constants_names_the_parameter(snippet, read):
    """``model[2].weight.grad``, ``params['w'].grad``: an item taken by a constant names one tensor as an attribute
    does."""
    script, found = frozen(snippet, '"norm" in name', read=f"{read}  # <- read")
    assert [(f.kind, f.line) for f in found] == [("no_update", script.line("freeze"))]
    assert ("symptom", script.line("read")) in {(p.role, p.line) for p in found[0].related}


def test_a_read_through_an_item_by_a_variable_names_none(snippet):
    """``params[i].grad`` in a loop over indices reads every parameter in turn, as a loop variable does."""
    _, found = frozen(snippet, '"norm" in name',
                      read="params = list(model.parameters())\nprint([params[i].grad for i in range(len(params))])")
    assert found == []


def test_a_whole_block_frozen_is_fine_tuning(snippet):
    _, found = frozen(snippet, 'name.startswith("body.")')
    assert found == []


def test_a_layer_frozen_in_its_module_constructor_is_the_model_s_design(snippet):
    init = "        self.body.norm.weight.requires_grad = False\n        self.body.norm.bias.requires_grad = False\n"
    _, found = frozen(snippet, "False", init=init)
    assert found == []


def test_a_layer_still_training_is_silent(snippet):
    _, found = frozen(snippet, "False")
    assert found == []


MADE = """
import torch
from torch import nn
torch.manual_seed(0)


class Heads(nn.Module):
    def __init__(self):
        super().__init__()
        self.bound = nn.Parameter(torch.ones(1), requires_grad={grad})  # <- made
        self.linear = nn.Linear(4, 1)

    def forward(self, x):
        return torch.minimum(self.linear(x), self.bound)


model = Heads()
opt = torch.optim.Adam(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
for step in range(3):
    loss = ((model(x) - y) ** 2).mean() + 0.01 * model.bound.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(model.bound.grad)  # <- read
"""


def test_a_parameter_made_without_grad_and_read_by_name_is_named_where_it_was_made(snippet):
    script = snippet(MADE.format(grad="False"))
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line, f.tensor) for f in found] == [("no_update", script.line("made"), "model.bound")]
    assert ("symptom", script.line("read")) in {(p.role, p.line) for p in found[0].related}
    assert "requires_grad=False" in found[0].fix


def test_the_same_parameter_made_trainable_is_silent(snippet):
    script = snippet(MADE.format(grad="True"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []


STAGED = """
import torch
from torch import nn
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.norm, self.out = nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 1)

    def forward(self, x):
        return self.out(self.norm(self.inp(x)))


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randn(8, 1)
for step in range(4):
    if step == {stage}:  # the second stage trains around a layer the first one tuned
        model.norm.weight.requires_grad_(False)
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(model.norm.weight.grad)
"""


def test_a_layer_trained_before_its_freeze_is_a_stage_of_the_schedule(snippet):
    script = snippet(STAGED.format(stage=2))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []


def test_the_same_layer_frozen_before_any_step_is_named(snippet):
    script = snippet(STAGED.format(stage=0))
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.tensor) for f in found] == [("no_update", "model.norm.weight")]
