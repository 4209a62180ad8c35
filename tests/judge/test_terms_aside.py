"""A term cut from the tensors the step after its backward updates, while it carries gradient only to tensors
no step after that backward updates, adds nothing to any step: named at the cut. A term cut for another
optimizer's step (both optimizers step; a discriminator's loss on a detached fake; an actor-critic's detached
advantage under one optimizer) stays silent."""
from __future__ import annotations

PRELUDE = """
import torch
from torch import nn
torch.manual_seed(0)
first, second = nn.Linear(3, 3), nn.Linear(3, 2)
opt_first = torch.optim.SGD(first.parameters(), lr=0.1)
opt_second = torch.optim.SGD(second.parameters(), lr=0.1)
data = torch.randn(5, 3)
for _ in range(2):
    made = first(data)
    own = (made - data).pow(2).mean()
"""


def _terms(snippet, code: str):
    script = snippet(PRELUDE + code)
    return script, [f for f in script.run().findings if f.kind == "cut_term"]


def test_a_term_that_only_trains_a_tensor_no_step_updates_is_named_at_the_cut(snippet):
    script, found = _terms(snippet, """
    other = second(made.detach()).pow(2).mean()  # <- cut
    opt_first.zero_grad()
    (own + other).backward()
    opt_first.step()
""")
    assert {(f.severity, f.line) for f in found} == {("warning", script.line("cut"))}


def test_a_term_for_an_optimizer_that_also_steps_is_silent(snippet):
    assert _terms(snippet, """
    other = second(made.detach()).pow(2).mean()
    opt_first.zero_grad()
    opt_second.zero_grad()
    (own + other).backward()
    opt_first.step()
    opt_second.step()
""")[1] == []


def test_a_discriminator_loss_on_a_detached_fake_is_silent(snippet):
    assert _terms(snippet, """
    real, fake = second(data).mean(), second(made.detach()).mean()
    opt_second.zero_grad()
    (fake - real).backward()
    opt_second.step()
    opt_first.zero_grad()
    (own - second(made).mean()).backward()
    opt_first.step()
""")[1] == []


def test_a_detached_advantage_under_one_optimizer_is_silent(snippet):
    assert _terms(snippet, """
    both = torch.optim.SGD(list(first.parameters()) + list(second.parameters()), lr=0.1)
    value = second(data).mean()
    actor = -(made.mean() * value.detach())
    both.zero_grad()
    (actor + value.pow(2)).backward()
    both.step()
""")[1] == []
