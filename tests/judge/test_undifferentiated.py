"""A loss made at every step of a run in which no backward and no step ever ran (an accumulation condition never
true, a flag that skips the manual update): the parameters an optimizer holds never get a gradient. An `optimizer`
error at the branch that holds the loss's function's one ``backward()``, else at the line that made the loss; a
loss made once (a script that stops after its first forward), or from weights no optimizer holds (an evaluation),
is silent."""
from __future__ import annotations

import pytest

CODE = """
import torch

torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
accumulate = {accumulate}
for i in range({steps}):
    loss = model(torch.randn(8, 3)).pow(2).mean()  # <- loss
    if (i + 1) % accumulate == 0:  # <- branch
        loss.backward()  # <- backward
        opt.step()
        opt.zero_grad()
print(model.weight.grad)  # <- read
"""

HANDLER = """
import torch

torch.manual_seed(0)


class Task:
    def __init__(self, model):
        self.model = model

    def training_step(self, x):
        return self.model(x).pow(2).mean()  # <- loss


model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
task = Task(model)
for _ in range(3):
    print(task.training_step(torch.randn(8, 3)).item())
"""


def loud(script):
    return [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_loss_whose_backward_sits_in_a_branch_never_taken_is_named_at_the_branch(snippet):
    script = snippet(CODE.format(accumulate=4, steps=3))
    (finding,) = loud(script)
    assert (finding.kind, finding.severity, finding.line) == ("optimizer", "error", script.line("branch"))
    assert finding.tensor == "SGD (2 parameters)" and finding.count == 3
    name = script.path.name
    assert f"backward() at {name}:{script.line('backward')}" in finding.message
    assert f"loss made at {name}:{script.line('loss')} (3 times)" in finding.message
    related = {(place.role, place.line) for place in finding.related}
    assert {("symptom", script.line("read")), ("used", script.line("loss"))} <= related


def test_a_loss_made_at_every_step_and_never_differentiated_is_named_where_it_is_made(snippet):
    script = snippet(HANDLER)
    (finding,) = loud(script)
    assert (finding.kind, finding.severity, finding.line) == ("optimizer", "error", script.line("loss"))
    assert "never differentiated" in finding.message and "loss.backward()" in finding.fix


@pytest.mark.parametrize("accumulate, steps", [(2, 4), (4, 1)])
def test_a_loop_that_differentiates_or_a_single_forward_is_silent(snippet, accumulate, steps):
    code = CODE.format(accumulate=accumulate, steps=steps).replace("print(model.weight.grad)", "print(model.weight)")
    assert loud(snippet(code)) == []


def test_an_evaluation_of_weights_no_optimizer_holds_is_silent(snippet):
    code = HANDLER.replace("opt = torch.optim.SGD(model.parameters(), lr=0.1)\n", "")
    assert loud(snippet(code)) == []
