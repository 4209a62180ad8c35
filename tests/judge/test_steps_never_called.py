"""An optimizer whose parameters get gradients but whose step() the script never calls is named at the backward
that reaches only its parameters, where the call belongs: the run's first backward as well as a later one (the
two discriminators of b17c_deblurganv2, each with a backward of its own and neither stepped)."""
from __future__ import annotations

import textwrap

PRELUDE = """
import torch
from torch import nn
torch.manual_seed(0)
x = torch.randn(4, 6)
"""


def test_each_optimizer_never_stepped_is_named_at_its_own_backward_the_first_one_too(snippet):
    script = snippet(PRELUDE + textwrap.dedent("""
    generator, critic_a, critic_b = nn.Linear(6, 6), nn.Linear(6, 1), nn.Linear(6, 1)
    opt_g = torch.optim.Adam(generator.parameters())
    opt_a, opt_b = torch.optim.Adam(critic_a.parameters()), torch.optim.Adam(critic_b.parameters())
    for step in range(3):
        opt_a.zero_grad()
        opt_b.zero_grad()
        fake = generator(x)
        (critic_a(fake.detach()) - critic_a(x)).mean().backward()  # <- a
        (critic_b(fake.detach()) - critic_b(x)).mean().backward()  # <- b
        opt_g.zero_grad()
        (-critic_a(fake) - critic_b(fake)).mean().backward()
        opt_g.step()
    """))
    found = {(f.line, f.tensor.split(".")[0]) for f in script.run().findings if f.severity in ("error", "warning")}
    assert found == {(script.line("a"), "critic_a"), (script.line("b"), "critic_b")}, found


SCHEDULED = """
model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
for epoch in range(3):
    for xb in x.split(2):
        optimizer.zero_grad()
        model(xb).pow(2).mean().backward()  # <- backward
        BATCH
    EPOCH
"""


def test_a_scheduler_stepped_where_the_optimizer_step_belongs_is_named(snippet):
    """pytorch#3814 (b17c_pytorch_scheduler_step_instead_of_optimizer_step): ``scheduler.step()`` after every backward
    and no ``optimizer.step()``: the scheduler's line is where the optimizer's step belongs. A schedule stepped once
    an epoch beside a forgotten ``optimizer.step()`` leaves the finding at the backward."""
    code = SCHEDULED.replace("BATCH", "scheduler.step()  # <- scheduler").replace("EPOCH", "pass")
    script = snippet(PRELUDE + textwrap.dedent(code))
    (finding,) = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert (finding.kind, finding.line) == ("optimizer", script.line("scheduler")), finding.message
    assert "optimizer.step() here" in finding.fix
    assert {(p.role, p.line) for p in finding.related} >= {("symptom", script.line("backward"))}
    script = snippet(PRELUDE + textwrap.dedent(SCHEDULED.replace("BATCH", "pass").replace("EPOCH", "scheduler.step()")))
    (finding,) = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert (finding.kind, finding.line) == ("optimizer", script.line("backward")), finding.message


def test_an_optimizer_never_stepped_beside_one_that_steps_a_joint_loss_is_named_at_that_step(snippet):
    """SoftMaskedBert (b24c_softmaskedbert): one loss sums the detector's and the corrector's terms, one backward gives
    both gradients, and only the corrector's optimizer steps: the detector's step belongs beside that step."""
    script = snippet(PRELUDE + textwrap.dedent("""
    detector, corrector = nn.Linear(6, 6), nn.Linear(6, 1)
    detector_optimizer = torch.optim.Adam(detector.parameters())  # <- built
    optimizer = torch.optim.Adam(corrector.parameters())
    for step in range(3):
        optimizer.zero_grad()
        prob = torch.sigmoid(detector(x))
        loss = corrector(x * prob).pow(2).mean() + prob.mean()
        loss.backward()  # <- backward
        optimizer.step()  # <- step
    """))
    (finding,) = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert (finding.kind, finding.line) == ("optimizer", script.line("step")), finding.message
    assert finding.tensor.startswith("detector.")
    assert "detector_optimizer.step() here" in finding.fix
    assert {(p.role, p.line) for p in finding.related} == {("used", script.line("built")),
                                                           ("symptom", script.line("backward"))}


INNER_LOOP = """
base, learned_rate = nn.Linear(6, 1), nn.Linear(1, 1)
meta_optimizer = torch.optim.SGD(learned_rate.parameters(), lr=0.1)
for episode in range(2):
    inner = torch.optim.SGD(base.parameters(), lr=0.0)  # <- inner
    weights = list(inner.param_groups[0]["params"])
    for step in range(2):
        loss = (torch.nn.functional.linear(x, *weights) ** 2).mean()
        grads = torch.autograd.grad(loss, weights, create_graph=True)  # <- grad
        rate = learned_rate(torch.ones(1))
        weights = [w - rate * g for w, g in zip(weights, grads)]
    meta_loss = (torch.nn.functional.linear(x, *weights) ** 2).mean()
    meta_optimizer.zero_grad()
    meta_loss.backward()
    meta_optimizer.step()
"""


def test_an_optimizer_a_differentiable_inner_loop_takes_its_settings_from_is_no_missing_step(snippet):
    """higher-style meta-learning (b42b_higher's fixed twin): a torch optimizer whose param_groups a differentiable
    inner loop reads, taking the gradients of its parameters itself with autograd.grad while the meta-optimizer steps,
    is never meant to step. When no optimizer steps at all (the meta-optimizer's step forgotten), steps are missing."""
    script = snippet(PRELUDE + textwrap.dedent(INNER_LOOP))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
    script = snippet(PRELUDE + textwrap.dedent(INNER_LOOP.replace("    meta_optimizer.step()\n", "")))
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert any(f.kind == "optimizer" and "never calls its step()" in f.message for f in found), found
