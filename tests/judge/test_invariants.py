"""The summary never contradicts what the script saw (issue 21, point 1): a `.grad` the script read as None
after a cut is no "got a gradient"; a parameter its optimizer stepped whose values never changed is not
fine (`no_update`); steps too small to move a value (vanishing gradients) are not that. A backward that
raised and was caught is covered in test_autograd_errors.py."""
from __future__ import annotations

import textwrap

import pytest

from gradcheck_l2c.record import fingerprints

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


@pytest.mark.parametrize("moved", [False, True])
def test_a_parameter_summed_in_chunks_is_unchanged_only_when_no_value_moved(snippet, monkeypatch, moved):
    """A parameter larger than a fingerprint's chunk (a language model's embedding) is summed a chunk at a time. Its
    optimizer's rate is 0; when the script itself moves the row the batch used (the last one) after each step, the
    values changed and the step is not blamed."""
    monkeypatch.setattr(fingerprints, "FINGERPRINT_COPY", 16)
    monkeypatch.setattr(fingerprints, "FINGERPRINT_CHUNK", 64)
    script, traced = run(snippet, f"""
    table = nn.Embedding(50, 8)
    opt = torch.optim.SGD(table.parameters(), lr=0.0)
    for step in range(2):
        opt.zero_grad()
        table(torch.tensor([49])).pow(2).sum().backward()
        opt.step()  # <- step
        if {moved}:
            with torch.no_grad():
                table.weight[49] -= 0.1 * table.weight.grad[49]
    """)
    stuck = [(f.kind, f.line, f.tensor) for f in traced.findings if f.kind == "no_update"]
    assert stuck == ([] if moved else [("no_update", script.line("step"), "Embedding.weight")])



@pytest.mark.parametrize("moved", [False, True])
def test_a_small_parameter_whose_values_the_script_swapped_is_not_unchanged(snippet, moved):
    """A small parameter is kept as a copy of its values, compared exactly: when the script swaps two of them by hand
    after each step at a rate of 0 (the values moved, their sums did not), the step is not blamed."""
    script, traced = run(snippet, f"""
    scale = nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))
    opt = torch.optim.SGD([scale], lr=0.0)
    for step in range(2):
        opt.zero_grad()
        (x[:, :3] * scale).sum().pow(2).backward()
        opt.step()  # <- step
        if {moved}:
            with torch.no_grad():
                scale.copy_(scale[[1, 0, 2]])
    """)
    stuck = [(f.kind, f.line) for f in traced.findings if f.kind == "no_update"]
    assert stuck == ([] if moved else [("no_update", script.line("step"))])


def test_the_rate_of_zero_is_read_from_the_group_that_holds_each_parameter(snippet):
    """Of many layers, those in a group with a rate of 0 are the ones not updated, and a parameter appended to
    another group's list in place is read with that group's rate (looked up by id, once per optimizer)."""
    script, traced = run(snippet, """
    layers = nn.Sequential(*[nn.Linear(4, 4) for _ in range(20)], nn.Linear(4, 1))
    head = layers[-1]
    frozen = [p for layer in layers[:-1] for p in layer.parameters()]
    opt = torch.optim.SGD([{"params": frozen, "lr": 0.0}, {"params": [head.bias]}], lr=0.1)
    opt.param_groups[1]["params"].append(head.weight)
    for step in range(2):
        opt.zero_grad()
        F.mse_loss(layers(x), y).backward()
        opt.step()  # <- step
    """)
    stuck = {f.tensor for f in traced.findings if f.kind == "no_update"}
    assert len(stuck) == 40 and not stuck & {"Sequential.20.weight", "Sequential.20.bias"}
    assert {f.line for f in traced.findings if f.kind == "no_update"} == {script.line("step")}


def test_a_gradient_zeroed_between_backward_and_step_is_no_update(snippet):
    script, traced = run(snippet, """
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        model.weight.grad.mul_(0)  # <- mask
        opt.step()  # <- step
    """)
    assert loud(traced.findings) == [("no_update", "warning", script.line("mask"), "Linear.weight")]
    assert "all zeros" in traced.findings[0].message
    assert ("used", script.line("step")) in {(p.role, p.line) for p in traced.findings[0].related}


def test_a_gradient_only_the_last_row_of_a_large_table_holds_is_no_zero_gradient(snippet):
    """A gradient is looked at from its first values first (`updates.nonzero`); one that only the table's last row
    holds, far past them, is still a gradient: masking it before the step is found at the mask, as for any other."""
    script, traced = run(snippet, """
    table = nn.Embedding(50, 100)
    opt = torch.optim.SGD(table.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        table(torch.tensor([49])).pow(2).sum().backward()
        table.weight.grad.mul_(0)  # <- mask
        opt.step()
    """)
    assert loud(traced.findings) == [("no_update", "warning", script.line("mask"), "Embedding.weight")]


def test_gradients_clipped_to_a_norm_of_zero_are_named_at_the_clipping(snippet):
    """clip_grad_norm_ with max_norm 0 (OpenNMT/OpenNMT-py#1140: -max_grad_norm 0 meant "no clipping") leaves
    every gradient zeros: the clipping is the line to change."""
    script, traced = run(snippet, """
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    max_grad_norm = 0.0
    for step in range(2):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)  # <- clip
        opt.step()
    """)
    assert sorted(loud(traced.findings)) == [("no_update", "warning", script.line("clip"), t)
                                             for t in ("Linear.bias", "Linear.weight")]


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


def test_a_warmup_factor_of_zero_is_named_at_the_schedule_function(snippet):
    script, traced = run(snippet, """
    from torch.optim.lr_scheduler import LambdaLR

    def warmup(step):
        if step < 10:
            return step / 10  # <- factor
        return 1.0

    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    schedule = LambdaLR(opt, warmup)
    F.mse_loss(model(x), y).backward()
    opt.step()  # <- step
    schedule.step()
    """)
    found = [f for f in traced.findings if f.kind == "no_update"]
    assert {f.line for f in found} == {script.line("factor")}
    assert ("used", script.line("step")) in {(p.role, p.line) for p in found[0].related}


def test_an_optimizer_whose_step_never_runs_is_named_at_the_condition(snippet):
    script, traced = run(snippet, """
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    accumulation = 1
    for i in range(4):
        F.mse_loss(model(x), y).backward()
        if i % accumulation:  # <- guard
            opt.step()
            opt.zero_grad()
    """)
    assert [(f.kind, f.severity, f.line) for f in traced.findings if f.severity == "warning"] == \
        [("no_update", "warning", script.line("guard"))]
    assert "never ran" in traced.findings[0].message


def test_an_optimizer_that_steps_after_accumulating_is_silent(snippet):
    _, traced = run(snippet, """
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(4):
        F.mse_loss(model(x), y).backward()
        if (i + 1) % 2 == 0:
            opt.step()
            opt.zero_grad()
    """)
    assert loud(traced.findings) == []


def test_a_schedule_that_ends_before_the_run_is_named_where_the_scheduler_was_built(snippet):
    """A linear decay whose length is shorter than the run (determined-ai/determined#711, SafeAILab/EAGLE#107):
    the rate is 0 from step 5 on, the weights learnt early and stopped."""
    script, traced = run(snippet, """
    from torch.optim.lr_scheduler import LambdaLR
    total = 4
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    schedule = LambdaLR(opt, lambda step: max(0.0, (total - step) / total))  # <- schedule
    for step in range(10):
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()  # <- step
        schedule.step()
    """)
    assert loud(traced.findings) == [("no_update", "warning", script.line("schedule"), "Linear.weight")]
    assert "stopped changing at step 5 of 10" in traced.findings[0].message
    assert ("used", script.line("step")) in {(p.role, p.line) for p in traced.findings[0].related}


def test_a_schedule_that_reaches_zero_at_the_last_step_or_rises_again_is_fine(snippet):
    _, traced = run(snippet, """
    from torch.optim.lr_scheduler import CosineAnnealingLR, LambdaLR
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    cosine = CosineAnnealingLR(opt, T_max=10)
    for step in range(11):  # the eleventh step runs at the cosine's end, 0
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
        cosine.step()
    second = nn.Linear(4, 1)
    other = torch.optim.SGD(second.parameters(), lr=0.1)
    restarts = LambdaLR(other, lambda step: 0.0 if step % 4 in (2, 3) else 1.0)
    for step in range(13):  # zero twice in a row, then above 0 again
        other.zero_grad()
        F.mse_loss(second(x), y).backward()
        other.step()
        restarts.step()
    """)
    assert loud(traced.findings) == []
