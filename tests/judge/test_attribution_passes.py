"""A backward run for gradients the script takes itself, through a hook that only looks at them (Grad-CAM's hook on a
layer, a tensor hook on an activation) or from a retained non-leaf's ``.grad``, is an attribution pass: the gradients
it leaves on the parameters are a by-product. No step has to read them, and the parameters of a model it alone reaches
(an old model's Grad-CAM map in a distillation loss) are in no optimizer on purpose. A hook that changes the gradient
(gradient reversal) reads nothing, and a training backward stays one whatever hooks look at it."""
from __future__ import annotations

import textwrap

import pytest

TRAINED = """
import copy
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # <- optimizer
for step in range(3):
    x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
store = {}
"""

#: Three ways to take the gradient of layer 3's output for a Grad-CAM map, after training.
READERS = {
    "module hook": """
        model[3].register_forward_hook(lambda m, i, out: store.__setitem__("act", out.detach()))
        model[3].register_full_backward_hook(lambda m, gin, gout: store.__setitem__("grad", gout[0].detach()))
        def gradient():
            return store["grad"]
        """,
    "tensor hook": """
        def keep(module, inputs, out):
            store["act"] = out.detach()
            out.register_hook(lambda g: store.__setitem__("grad", g.detach()))
        model[3].register_forward_hook(keep)
        def gradient():
            return store["grad"]
        """,
    "retained": """
        def keep(module, inputs, out):
            out.retain_grad()
            store["out"], store["act"] = out, out.detach()
        model[3].register_forward_hook(keep)
        def gradient():
            return store["out"].grad
        """,
}

CAM = """
model.eval()
for i in range(3):
    model.zero_grad()
    out = model(torch.randn(1, 3, 8, 8))
    out[0, out.argmax()].backward()
    cam = F.relu((gradient().mean((2, 3), keepdim=True) * store["act"]).sum(1))
    print(i, float(cam.max()))
"""


def loud(script):
    return [(f.kind, f.tensor, f.line) for f in script.run().findings if f.severity in ("error", "warning")]


@pytest.mark.parametrize("reader", list(READERS))
def test_a_grad_cam_map_after_training_is_silent(snippet, reader):
    assert loud(snippet(TRAINED + textwrap.dedent(READERS[reader]) + CAM)) == []


def test_an_old_models_grad_cam_pass_leaves_its_parameters_out_of_the_optimizer_silently(snippet):
    """Learning without Memorizing: a frozen copy's attention map, taken by backward through it at every step; a head
    added after the optimizer was built is still in no optimizer."""
    script = snippet(TRAINED + textwrap.dedent("""
        old = copy.deepcopy(model)
        old[3].register_full_backward_hook(lambda m, gin, gout: store.__setitem__("grad", gout[0].detach()))
        head = nn.Linear(8, 2)
        for step in range(3):
            x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
            old.zero_grad()
            score = old(x)
            score.gather(1, score.argmax(1, keepdim=True)).sum().backward()
            features = model[:6](x)
            attention = store["grad"].abs().mean()
            loss = F.cross_entropy(model[6](features), y) + head(features).pow(2).mean() + attention
            opt.zero_grad()
            loss.backward()
            opt.step()
        """))
    assert {(kind, line) for kind, _, line in loud(script)} == {("optimizer", script.line("optimizer"))}


def test_a_hook_that_changes_the_gradient_leaves_a_backward_no_step_reads_named(snippet):
    """Gradient reversal by a tensor hook reads nothing: the second backward is still cleared unread."""
    script = snippet(TRAINED + textwrap.dedent("""
        for step in range(3):
            x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()  # <- step
            features = model[:6](x)
            features.register_hook(lambda g: -g)
            model[6](features).pow(2).mean().backward()  # <- unread
        """))
    assert loud(script) == [("optimizer", "Adam", script.line("step"))]


def test_a_hook_that_looks_at_a_training_backward_leaves_a_parameter_out_of_the_optimizer_named(snippet):
    script = snippet(TRAINED + textwrap.dedent("""
        norms = []
        model[3].register_full_backward_hook(lambda m, gin, gout: norms.append(gout[0].norm().item()))
        scale = nn.Parameter(torch.ones(4))
        for step in range(3):
            x, y = torch.randn(8, 3, 8, 8), torch.randint(0, 4, (8,))
            opt.zero_grad()
            F.cross_entropy(model(x) * scale, y).backward()
            opt.step()
        """))
    assert loud(script) == [("optimizer", "scale", script.line("optimizer"))]
