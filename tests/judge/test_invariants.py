"""The summary never contradicts what the script saw (issue 21, point 1): a `.grad` the script read as None
after a cut is no "got a gradient"; a parameter its optimizer stepped whose values never changed is not
fine (`no_update`); steps too small to move a value (vanishing gradients) are not that. A backward that
raised and was caught is covered in test_autograd_errors.py."""
from __future__ import annotations

import textwrap

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randn(8, 1)
model = nn.Linear(4, 1)
"""


def run(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code))
    return script, script.run()


def loud(found):
    return [(f.kind, f.severity, f.line, f.tensor) for f in found if f.severity in ("error", "warning")]


def test_a_grad_read_as_none_after_a_later_cut_is_a_symptom_with_its_cause(snippet):
    script, traced = run(snippet, """
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        opt.zero_grad()
        out = model(x)
        if step == 2:
            out = out.detach() + 0 * model.bias  # <- cut
        loss = F.mse_loss(out, y)
        loss.backward()
        seen = model.weight.grad  # <- read
        opt.step()
    """)
    assert traced.namespace["seen"] is None
    cut = [f for f in traced.findings if f.kind == "detach"]
    assert [(f.line, f.tensor) for f in cut] == [(script.line("cut"), "Linear.weight")]
    assert ("symptom", script.line("read")) in {(p.role, p.line) for p in cut[0].related}
    assert "no findings" not in traced.report()


def test_a_parameter_stepped_with_learning_rate_zero_is_not_fine(snippet):
    script, traced = run(snippet, """
    opt = torch.optim.AdamW(model.parameters(), lr=0.0)
    for step in range(2):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()  # <- step
    """)
    assert sorted(loud(traced.findings)) == [("no_update", "warning", script.line("step"), t)
                                             for t in ("Linear.bias", "Linear.weight")]
    assert "learning rate was 0" in traced.findings[0].message
    assert "no findings" not in traced.report()


def test_a_gradient_zeroed_between_backward_and_step_is_no_update(snippet):
    script, traced = run(snippet, """
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        model.weight.grad.mul_(0)
        opt.step()  # <- step
    """)
    assert loud(traced.findings) == [("no_update", "warning", script.line("step"), "Linear.weight")]
    assert "all zeros" in traced.findings[0].message


def test_steps_too_small_to_move_a_weight_are_no_missing_update(snippet):
    """Float32 cannot add 1e-7 to 1e8: the weight keeps its values, but its gradient and its step were
    there. That is a vanishing gradient, not a missing update."""
    _, traced = run(snippet, """
    with torch.no_grad():
        model.weight.fill_(1e8)
    opt = torch.optim.SGD(model.parameters(), lr=1e-10)
    for step in range(2):
        opt.zero_grad()
        model(x).mean().backward()
        opt.step()
    """)
    assert loud(traced.findings) == []
