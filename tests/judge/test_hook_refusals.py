"""A backward started inside a hook that autograd runs during another backward (a gradient penalty taken in a tensor
hook, a layer's weight gradient recomputed in a module's backward hook) is refused: autograd runs hooks with
gradients off, so what the hook computed has no graph. The refusal reaches the script through the outer backward,
whose loss is fine: the line to change is the hook's line that computed from values requiring grad."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

TENSOR_HOOK = """
import torch

x = torch.ones(5, requires_grad=True)
v = x.pow(3)


def penalty(grad):
    g = grad.clone().requires_grad_(True)
{guard}    norm = (g * v).pow(2).sum()  # <- computed
{guard}    torch.autograd.grad(norm, g)  # <- refused


v.register_hook(penalty)
v.sum().backward()  # <- outer
"""

MODULE_HOOK = """
import torch
from torch import nn

torch.manual_seed(0)


def recompute(inp, layer, grad_out):
    x = inp.detach().requires_grad_(True)
    copy = nn.Linear(layer.in_features, layer.out_features)
    copy.load_state_dict(layer.state_dict())
{guard}    y = copy(x)  # <- computed
{guard}    out = y * grad_out
{guard}    out.sum().backward()  # <- refused
    return copy.weight.grad


saved, grads = {}, {}


def keep_input(module, inputs, output):
    saved[module] = inputs[0]


def weight_grad(module, grad_input, grad_output):
    grads[module] = recompute(saved[module], module, grad_output[0])


model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
model[0].register_forward_hook(keep_input)
model[0].register_full_backward_hook(weight_grad)
loss = model(torch.randn(3, 4)).pow(2).mean()
loss.backward()  # <- outer
"""

GUARDED = "    with torch.enable_grad():\n    "


@pytest.mark.parametrize("code", [TENSOR_HOOK, MODULE_HOOK], ids=["tensor hook", "module backward hook"])
def test_a_backward_refused_inside_a_hook_is_named_where_the_hook_computed_without_a_graph(snippet, code):
    """The note on PyTorch's error names the hook's line, the outer backward, and the fix."""
    script = snippet(code.replace("{guard}", ""))
    with pytest.raises(RuntimeError, match="does not require grad") as raised:
        script.run()
    note = "\n".join(getattr(raised.value, "__notes__", ()))
    assert f":{script.line('computed')}: this line runs in " in note
    assert f"during the backward at {script.path.name}:{script.line('outer')}" in note
    assert "torch.enable_grad()" in note


@pytest.mark.parametrize("code", [TENSOR_HOOK, MODULE_HOOK], ids=["tensor hook", "module backward hook"])
def test_the_finding_has_the_refused_call_as_its_symptom(snippet, code):
    script = snippet(code.replace("{guard}", ""))
    namespace = {"__name__": "__main__", "__file__": str(script.path)}
    with pytest.raises(RuntimeError):
        with trace() as t:
            exec(compile(script.code, str(script.path), "exec"), namespace)
    errors = [f for f in t.findings if f.severity == "error"]
    assert [(f.kind, f.line) for f in errors] == [("no_grad", script.line("computed"))]
    assert ("symptom", script.line("refused")) in {(p.role, p.line) for p in errors[0].related}


@pytest.mark.parametrize("code", [TENSOR_HOOK, MODULE_HOOK], ids=["tensor hook", "module backward hook"])
def test_the_hook_computing_under_enable_grad_is_silent(snippet, code):
    assert snippet(code.replace("{guard}", GUARDED)).run().findings == []
