"""A run whose optimizer steps although no backward ever ran (``loss.backward()`` forgotten) is named at the
``step()``; a step before the first backward in a run that trains is not."""
from __future__ import annotations

PRELUDE = """
import torch
from torch import nn
torch.manual_seed(0)
net = nn.Linear(3, 2)
opt = torch.optim.Adam(net.parameters(), lr=0.1)
a, b = torch.randn(5, 3), torch.randn(5, 2)
"""


def _optimizer(snippet, code: str):
    script = snippet(PRELUDE + code)
    return script, [f for f in script.run().findings if f.kind == "optimizer"]


def test_steps_without_any_backward_are_named_at_the_step(snippet):
    script, found = _optimizer(snippet, """
for _ in range(3):
    err = ((net(a) - b) ** 2).mean()
    opt.zero_grad()
    opt.step()  # <- step
""")
    assert [(f.severity, f.line) for f in found] == [("error", script.line("step"))]
    assert "backward" in found[0].fix
    assert found[0].related == ()


def test_a_gradient_read_before_the_step_is_where_the_script_saw_it(snippet):
    script, found = _optimizer(snippet, """
for _ in range(3):
    err = ((net(a) - b) ** 2).mean()
    opt.zero_grad()
    print("gradient norm", net.weight.grad)  # <- read
    opt.step()  # <- step
""")
    assert [(f.severity, f.line) for f in found] == [("error", script.line("step"))]
    assert [(place.role, place.line) for place in found[0].related] == [("symptom", script.line("read"))]


def test_a_step_before_the_first_backward_of_a_training_run_is_silent(snippet):
    _, found = _optimizer(snippet, """
opt.step()
for _ in range(2):
    err = ((net(a) - b) ** 2).mean()
    opt.zero_grad()
    err.backward()
    opt.step()
""")
    assert found == []


def test_a_closure_that_runs_backward_inside_step_is_silent(snippet):
    _, found = _optimizer(snippet, """
lbfgs = torch.optim.LBFGS(net.parameters(), max_iter=2)
def closure():
    lbfgs.zero_grad()
    err = ((net(a) - b) ** 2).mean()
    err.backward()
    return err
lbfgs.step(closure)
""")
    assert found == []

