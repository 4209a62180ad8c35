"""A ``.grad`` read that finds None after a ``zero_grad()`` that ran since the backward (here inside a training
wrapper's ``update_params()`` that runs backward, step and zero_grad in one call, as mmengine's) is named at that
``zero_grad()``, the read as symptom; a read above the call that reached it, at the top of the next step before its
backward, finds the None any step starts from and is silent."""
from __future__ import annotations

CODE = """
import torch
from torch import nn
torch.manual_seed(0)


class Wrapper:
    def __init__(self, optimizer):
        self.optimizer = optimizer

    def update_params(self, loss):
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()  # <- clear


model = nn.Linear(4, 2)
wrapper = Wrapper(torch.optim.SGD(model.parameters(), lr=0.1))


def train_step(x, y):
    loss = nn.functional.mse_loss(model(x), y)
    {before}
    wrapper.update_params(loss)  # <- call
    {after}


for step in range(3):
    train_step(torch.randn(8, 4), torch.randn(8, 2))
"""


def findings(snippet, before="pass", after="pass"):
    script = snippet(CODE.format(before=before, after=after))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_read_after_the_wrapper_call_is_named_at_the_zero_grad(snippet):
    script, found = findings(snippet, after="print(model.weight.grad)  # <- read")
    assert [(f.kind, f.line) for f in found] == [("optimizer", script.line("clear"))]
    assert any(r.role == "symptom" and r.line == script.line("read") for r in found[0].related)
    assert "set it to None after the backward that gave it" in found[0].message


def test_a_read_before_the_next_backward_is_silent(snippet):
    _, found = findings(snippet, before="print(model.weight.grad)")
    assert found == []
