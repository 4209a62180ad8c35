"""Gradient accumulation undone: a ``zero_grad()`` inside the micro-batch loop (the optimizer's, or the model's when a
wrapper gates the optimizer's) clears each backward's gradients before the step every few micro-batches reads them, so
each step sees only the last one. Named at that ``zero_grad()``; the loop that clears right after its step, and one
that skips a step now and then (a non-finite loss), are silent."""
from __future__ import annotations

import pytest

CODE = """
import torch
from torch import nn
torch.manual_seed(0)

encoder = nn.Linear(8, 8).eval()  # frozen, run under no_grad: a cut of what no optimizer steps
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(8)]
for index, (x, y) in enumerate(batches, 1):
    with torch.no_grad():
        x = encoder(x)
    {before}
    loss = nn.functional.mse_loss(model(x), y) / 4
    loss.backward()
    if {step_when}:
        optimizer.step()
        {after}
"""


def findings(snippet, before="", step_when="index % 4 == 0", after="pass"):
    script = snippet(CODE.format(before=before + "  # <- clear", step_when=step_when, after=after))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


@pytest.mark.parametrize("clear", ["optimizer.zero_grad()", "model.zero_grad(set_to_none=True)"])
def test_a_zero_grad_in_the_micro_batch_loop_is_named(snippet, clear):
    script, found = findings(snippet, before=clear)
    assert [(f.kind, f.severity, f.line) for f in found] == [("optimizer", "error", script.line("clear"))]
    assert "before SGD.step()" in found[0].message and "at 6 of that backward's 8 runs" in found[0].message
    assert "zero_grad() below step()" in found[0].fix


def test_clearing_right_after_the_step_is_silent(snippet):
    _, found = findings(snippet, after="optimizer.zero_grad()")
    assert found == []


def test_a_step_skipped_now_and_then_is_silent(snippet):
    """A step skipped for one micro-batch (a non-finite loss, GradScaler's skipped step) loses that batch on purpose."""
    _, found = findings(snippet, before="optimizer.zero_grad()", step_when="index != 3")
    assert found == []


SHARED_BACKWARD = """
import torch
from torch import nn
torch.manual_seed(0)

model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
critic = nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
critic_optimizer = torch.optim.Adam(critic.parameters(), lr=0.01)
batches = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(8)]

def manual_backward(loss):
    loss.backward()

for index, (x, y) in enumerate(batches, 1):
    out = model(x)
    optimizer.zero_grad()  # <- clear
    manual_backward(nn.functional.mse_loss(out, y) / 4 - critic(out).mean())
    critic_optimizer.zero_grad()
    manual_backward(critic(out.detach()).mean())
    if index % 2 == 0:
        optimizer.step()
        critic_optimizer.step()
"""


def test_a_backward_helper_shared_with_a_loss_on_a_detached_output_is_named(snippet):
    """Lightning's ``manual_backward`` runs the generator's loss and the critic's loss on its detached output: the
    critic's backward misses the generator through that detach, which explains nothing about the clearing."""
    script = snippet(SHARED_BACKWARD)
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.severity, f.line) for f in found] == [("optimizer", "error", script.line("clear"))]
