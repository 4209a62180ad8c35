"""`ddp_unused`: DDP's parameters that got no gradient, named with their line and why, in one process.

A one-rank gloo group is enough for DDP to raise its "Expected to have finished reduction" error;
the real multi-process jobs are in tests/distributed/.
"""
from __future__ import annotations

import sys
import textwrap

import pytest
import torch.distributed as dist

PRELUDE = """
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
torch.manual_seed(0)
x = torch.randn(8, 4)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)  # <- body
        self.head = nn.Linear(8, 1)
        self.aux = nn.Linear(8, 1)  # <- aux
"""

#: Two iterations: DDP raises in the second forward about the first one, when a parameter got no gradient.
TRAIN = """
model = DDP(Net(){options})  # <- wrap
opt = torch.optim.SGD(model.parameters(), lr=0.1)
try:
    for step in range(2):
        loss = model(x).pow(2).mean()  # <- forward
        opt.zero_grad()
        loss.backward()
        opt.step()
except RuntimeError as error:
    failure = error
"""


@pytest.fixture
def process_group(tmp_path):
    """A one-rank gloo process group, destroyed after the test (with the ``[rank0]:`` traceback prefix
    torch.distributed puts into ``sys.excepthook``)."""
    excepthook = sys.excepthook
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    yield
    dist.destroy_process_group()
    sys.excepthook = excepthook


def ddp_program(forward: str, options: str = "") -> str:
    return PRELUDE + textwrap.indent(textwrap.dedent(forward), "    ") + TRAIN.format(options=options)


def ddp_findings(t):
    return [f for f in t.findings if f.kind == "ddp_unused"]


def test_a_layer_forward_never_calls_is_named_with_its_line_and_the_forward(snippet, process_group):
    script = snippet(ddp_program("""
    def forward(self, x):
        return self.head(torch.relu(self.body(x)))
    """))
    t = script.run()
    found = ddp_findings(t)
    assert {(f.tensor, f.line, f.severity) for f in found} == {
        ("Net.aux.weight", script.line("aux"), "error"), ("Net.aux.bias", script.line("aux"), "error")}
    assert all("never called" in f.message and "Net.forward" in f.message for f in found)
    assert {(p.role, p.line) for p in found[0].related} == {("symptom", script.line("forward"))}
    assert "failure" in t.namespace  # DDP's error itself still reaches the script
    assert not [f for f in t.findings if f.kind in ("detach", "unused_parameter")]  # DDP's broadcast is no cut


def test_a_layer_whose_output_is_cut_names_the_cut(snippet, process_group):
    script = snippet(ddp_program("""
    def forward(self, x):
        h = torch.relu(self.body(x)).detach()  # <- cut
        return self.head(h) + 0 * self.aux(h)
    """))
    t = script.run()
    found = ddp_findings(t)
    assert {f.tensor for f in found} == {"Net.body.weight", "Net.body.bias"}
    assert {f.line for f in found} == {script.line("body")}
    assert all("cut from the loss" in f.message for f in found)
    assert {p.line for f in found for p in f.related if p.role == "used"} == {script.line("cut")}
    assert ("detach", script.line("cut")) in {(f.kind, f.line) for f in t.findings}


def test_a_called_layer_whose_output_is_dropped_names_the_call(snippet, process_group):
    script = snippet(ddp_program("""
    def forward(self, x):
        h = torch.relu(self.body(x))
        extra = self.aux(h)  # <- call
        return self.head(h)
    """))
    found = ddp_findings(script.run())
    assert {f.tensor for f in found} == {"Net.aux.weight", "Net.aux.bias"}
    assert all("did not reach the loss" in f.message for f in found)
    assert {p.line for f in found for p in f.related if p.role == "used"} == {script.line("call")}


def test_a_parameter_frozen_after_wrapping(snippet, process_group):
    script = snippet(ddp_program("""
    def forward(self, x):
        return self.head(torch.relu(self.body(x))) + self.aux(x.new_zeros(8, 8))
    """).replace("opt = torch.optim", "model.module.aux.weight.requires_grad_(False)\nopt = torch.optim"))
    found = ddp_findings(script.run())
    assert [f.tensor for f in found] == ["Net.aux.weight"]
    assert "frozen" in found[0].message and "before wrapping" in found[0].fix


def test_find_unused_parameters_names_what_it_finds_as_a_warning(snippet, process_group):
    script = snippet(ddp_program("""
    def forward(self, x):
        return self.head(torch.relu(self.body(x)))
    """, options=", find_unused_parameters=True"))
    t = script.run()
    assert "failure" not in t.namespace
    found = ddp_findings(t)
    assert {(f.tensor, f.line, f.severity) for f in found} == {
        ("Net.aux.weight", script.line("aux"), "warning"), ("Net.aux.bias", script.line("aux"), "warning")}
    assert not [f for f in t.findings if f.kind == "unused_parameter"]


def test_a_correct_ddp_model_is_silent(snippet, process_group):
    script = snippet(ddp_program("""
    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.head(h) + self.aux(h)
    """))
    t = script.run()
    assert "failure" not in t.namespace
    assert t.findings == []
    assert all(w.got_grad for w in t.watched)
    assert {w.name for w in t.watched} == {f"Net.{m}.{p}" for m in ("body", "head", "aux") for p in ("weight", "bias")}


def test_no_sync_accumulation_is_silent(snippet, process_group):
    script = snippet(PRELUDE + textwrap.indent(textwrap.dedent("""
    def forward(self, x):
        h = torch.relu(self.body(x))
        return self.head(h) + self.aux(h)
    """), "    ") + textwrap.dedent("""
    model = DDP(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        with model.no_sync():
            model(x).pow(2).mean().backward()
        model(x).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    """))
    assert script.run().findings == []


def test_static_graph_names_the_parameter_the_first_iteration_skipped(snippet, process_group):
    script = snippet(PRELUDE + textwrap.indent(textwrap.dedent("""
    def forward(self, x, step):  # <- forward
        h = torch.relu(self.body(x))
        return self.head(h) + (self.aux(h) if step else 0)
    """), "    ") + textwrap.dedent("""
    model = DDP(Net(), static_graph=True)
    try:
        for step in range(2):
            model(x, step).pow(2).mean().backward()  # <- backward
    except RuntimeError as error:
        failure = error
    """))
    t = script.run()
    assert "failure" in t.namespace
    found = ddp_findings(t)
    assert {(f.tensor, f.line) for f in found} == {("Net.aux.weight", script.line("aux")),
                                                  ("Net.aux.bias", script.line("aux"))}
    assert all("static_graph=True" in f.message and "iteration 1" in f.message for f in found)
    assert all(f"({script.path.name}:{script.line('forward')}) skips it" in f.message for f in found)
    assert {p.line for f in found for p in f.related if p.role == "symptom"} == {script.line("backward")}
