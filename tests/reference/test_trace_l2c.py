"""The tracer on the embedded demo: the seed's broken L2C and the reference L2C."""
from __future__ import annotations

import ast
import re
import runpy
import sys
from pathlib import Path

import pytest
import torch

from gradcheck_l2c import trace
from reference.l2c import L2CConfig, run_l2c

SEED = Path(__file__).resolve().parents[2] / "reference" / "seed_l2c.py"


def line_of(text: str) -> int:
    """The seed's line holding ``text`` (the test locates lines; the tracer never reads source)."""
    code_starts = ast.parse(SEED.read_text()).body[0].end_lineno  # skip the docstring that lists the bugs
    (number,) = [n for n, line in enumerate(SEED.read_text().splitlines(), 1) if n > code_starts and text in line]
    return number


def run_seed():
    """Run the question's script as ``python reference/seed_l2c.py`` does: its folder first on ``sys.path``
    (it imports its sibling ``data.py`` that way, under whichever name the reference is installed)."""
    sys.path.insert(0, str(SEED.parent))
    try:
        runpy.run_path(str(SEED), run_name="__main__")
    finally:
        sys.path.remove(str(SEED.parent))
        sys.modules.pop("data", None)


@pytest.fixture(scope="module")
def seed_trace():
    with trace() as t:
        run_seed()
    return t


def test_seed_alpha_cuts_in_flow_order(seed_trace):
    alpha = [(f.kind, f.line) for f in seed_trace.findings if f.tensor == "CNNCifar.alpha" and f.severity == "error"]
    assert alpha == [("item", line_of("model.w[i][j].item()")),
                     ("state_dict_reload", line_of("model.load_state_dict(theta_next)"))]
    assert {w.name: w.got_grad for w in seed_trace.watched}["CNNCifar.alpha"] is False


def test_seed_other_bugs(seed_trace):
    found = {(f.kind, f.tensor, f.line) for f in seed_trace.findings}
    assert ("non_parameter_tensor", "CNNCifar.w", line_of("self.w = torch.randn")) in found
    # alpha sits in the SGD over model.parameters() and in its own Adam: the SGD, which took every parameter
    assert ("optimizer", "CNNCifar.alpha", line_of("optimizer = optim.SGD(model.parameters()")) in found
    alias = [f for f in seed_trace.findings if f.kind == "state_dict_alias"]
    assert [f.line for f in alias] == [line_of("    theta = [model.state_dict().copy()")]
    assert [(r.role, r.line) for r in alias[0].related] == [
        ("symptom", line_of("delta_theta[i][name] = theta[i][name] - theta_half[i][name]"))]


def test_seed_findings_point_into_the_seed(seed_trace):
    assert all(Path(f.file) == SEED for f in seed_trace.findings)
    assert all(f.code and f.message and f.fix for f in seed_trace.findings)


def test_seed_graph_is_captured_for_rendering(seed_trace):
    graph = seed_trace.graphs[0]
    assert "CNNCifar.alpha" in graph.missing
    assert [cut.finding.kind for cut in graph.cuts if cut.finding.tensor == "CNNCifar.alpha"] == [
        "item", "state_dict_reload"]


TINY = L2CConfig(nodes=3, rounds=2, local_epochs=1, t0=0, k0=1, device="cpu")


def test_reference_l2c_is_silent_and_alpha_learns():
    with trace() as t:
        result = run_l2c(TINY)
    assert [f for f in t.findings if f.severity in ("error", "warning")] == []
    assert {w.name: w.got_grad for w in t.watched}["alpha"] is True
    assert bool((result.alpha_grad_norms > 0).all())


def test_tracing_changes_no_result_bitwise():
    plain = run_l2c(TINY)
    with trace():
        traced = run_l2c(TINY)
    assert torch.equal(plain.alpha, traced.alpha) and torch.equal(plain.mixing, traced.mixing)
    assert all(torch.equal(plain.params[k], traced.params[k]) for k in plain.params)
    assert torch.equal(plain.accuracies, traced.accuracies)


def test_tracing_the_seed_changes_nothing_it_prints(capfd):
    run_seed()
    plain = capfd.readouterr().out
    with trace():
        run_seed()
    assert capfd.readouterr().out == plain
    assert "gradient of alpha is None" in plain


def test_seed_graph_renders_alpha_red_with_both_cuts(seed_trace):
    from gradcheck_l2c import render

    source = render(seed_trace.graphs[0]).source
    assert f"seed_l2c.py:{line_of('model.w[i][j].item()')}" in source
    assert f"seed_l2c.py:{line_of('model.load_state_dict(theta_next)')}" in source
    alpha_nodes = [line for line in source.splitlines() if "<B>CNNCifar.alpha</B>" in line and "fillcolor" in line]
    assert alpha_nodes and all("tomato" in line for line in alpha_nodes)
    # one story per cause: the .item() box leads to the load_state_dict box its values went through next
    boxes = dict(re.findall(r"\t(cut\d+) \[label=<<B>([^ <]+)", source))
    item = next(key for key, label in boxes.items() if label == ".item()")
    reload = next(key for key, label in boxes.items() if label == "load_state_dict()")
    assert f"{item} -> {reload}" in source


def test_recorded_sites_group_the_drawing_by_module():
    from gradcheck_l2c import render

    with trace(record_sites=True) as t:
        run_seed()
    source = render(t.graphs[0]).source
    assert "label=<CNNCifar.conv1>" in source and "label=<CNNCifar.fc3>" in source
    assert f"seed_l2c.py:{line_of('x = self.fc3(x)')}" in source


def test_seed_write_into_w_is_a_note_not_a_cut(seed_trace):
    """The answer blamed `model.w[i] = ...`; autograd records that write, so it is only a note."""
    notes = {(f.kind, f.tensor, f.line, f.severity) for f in seed_trace.findings if f.severity == "info"}
    write = line_of("model.w[i] = compute_mixing_weights(")
    assert ("inplace_saved", "CNNCifar.alpha", write, "info") in notes
    assert all(f.line != write for f in seed_trace.findings if f.severity != "info")
