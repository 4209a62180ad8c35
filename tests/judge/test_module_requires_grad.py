"""``module.requires_grad = True`` makes a plain attribute on the Module object; its parameters keep their own flags.
An unfreeze written so leaves the layer frozen (named at the assignment, the ``.grad`` read that found None as the
symptom), a freeze written so leaves it learning; ``requires_grad_()`` and a module that keeps the flag in step with
its parameters are silent."""
from __future__ import annotations

PRELUDE = """
import torch
from torch import nn
torch.manual_seed(0)
backbone, head = nn.Linear(4, 8), nn.Linear(8, 1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
"""

TRAIN = """
opt = torch.optim.SGD([p for m in (backbone, head) for p in m.parameters() if p.requires_grad], lr=0.1)
for step in range(3):
    opt.zero_grad()
    nn.functional.mse_loss(head(torch.relu(backbone(x))), y).backward()
    opt.step()
"""


def loud(snippet, code: str):
    script = snippet(PRELUDE + code + TRAIN)
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_an_unfreeze_set_on_the_module_is_named_with_the_read_that_found_none(snippet):
    script, found = loud(snippet, """
backbone.requires_grad_(False)
backbone.requires_grad = True  # <- flag
""" + TRAIN + """
print(backbone.weight.grad)  # <- read
""")
    assert {(f.kind, f.severity, f.line) for f in found} == {("module_requires_grad", "error", script.line("flag"))}
    assert {f.tensor for f in found} == {"backbone.weight", "backbone.bias"}
    assert any(("symptom", script.line("read")) in {(p.role, p.line) for p in f.related} for f in found)
    assert "requires_grad_(True)" in found[0].fix


def test_a_freeze_set_on_the_module_is_named_when_the_layer_keeps_learning(snippet):
    script, found = loud(snippet, """
backbone.requires_grad = False  # <- flag
""")
    assert {(f.kind, f.severity, f.line) for f in found} == {("module_requires_grad", "warning", script.line("flag"))}


def test_requires_grad_underscore_is_silent(snippet):
    _, found = loud(snippet, """
backbone.requires_grad_(False)
""")
    assert found == []


def test_a_module_that_keeps_its_own_flag_in_step_is_silent(snippet):
    _, found = loud(snippet, """
class Frozen(nn.Module):
    def __init__(self, requires_grad):
        super().__init__()
        self.requires_grad = requires_grad
        self.layer = nn.Linear(4, 4)
        for p in self.layer.parameters():
            p.requires_grad = requires_grad

frozen = Frozen(False)
x = frozen.layer(x).detach()
""")
    assert found == []
