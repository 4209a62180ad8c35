"""A backward that reaches only the parameters of one optimizer, followed at once by another optimizer's ``step()``
(``student_loss.backward()`` then ``optimizer.step()``, the teacher's: a slip of the name), while the first never
steps: an `optimizer` warning at that ``step()``, whose fix names the optimizer to step there. The zero_grad() of the
optimizer that never steps is no gradient accumulation undone."""
from __future__ import annotations

CODE = """
import torch
from torch import nn

torch.manual_seed(0)
teacher, student = nn.Linear(4, 3), nn.Linear(4, 3)
optimizer = torch.optim.SGD(teacher.parameters(), lr=0.1)
student_optimizer = torch.optim.Adam(student.parameters())  # <- built
for _ in range(4):
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    logits = teacher(x)
    loss = nn.functional.cross_entropy(logits, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    student_loss = nn.functional.kl_div(student(x).log_softmax(1), logits.detach().softmax(1), reduction="batchmean")
    student_optimizer.zero_grad()
    student_loss.backward()  # <- backward
    {step}  # <- step
print("student gradient norm", student.weight.grad.norm().item())
"""


def loud(snippet, step: str):
    script = snippet(CODE.format(step=step))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_the_other_optimizers_step_after_a_backward_is_named_with_the_one_to_step(snippet):
    script, found = loud(snippet, "optimizer.step()")
    assert [(f.kind, f.severity, f.line) for f in found] == [("optimizer", "warning", script.line("step"))]
    (finding,) = found
    assert "this step() is the SGD's" in finding.message and "the Adam built at" in finding.message
    assert finding.fix == "step the optimizer that holds them here: student_optimizer.step()."
    related = {(place.role, place.line) for place in finding.related}
    assert related == {("symptom", script.line("backward")), ("used", script.line("built"))}


def test_stepping_the_right_optimizer_is_silent(snippet):
    assert loud(snippet, "student_optimizer.step()")[1] == []
