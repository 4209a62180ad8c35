"""The ``%%gradcheck`` cell magic, run in a real IPython shell."""
from __future__ import annotations

import graphviz
import pytest

pytest.importorskip("IPython")
from IPython.core.error import UsageError  # noqa: E402
from IPython.testing import globalipapp  # noqa: E402

from gradcheck_l2c import magic  # noqa: E402
from gradcheck_l2c.tracer import active_trace  # noqa: E402

SETUP = """
import torch
from torch import nn
model = nn.Linear(3, 1)
alpha = nn.Parameter(torch.zeros(3))
"""

BROKEN = """
scale = torch.softmax(alpha, 0)[0].item()
loss = model(torch.ones(2, 3) * scale).sum()
loss.backward()
"""

FIXED = """
scale = torch.softmax(alpha, 0)[0]
loss = model(torch.ones(2, 3) * scale).sum()
loss.backward()
"""


@pytest.fixture(scope="module")
def shell():
    ip = globalipapp.start_ipython() or globalipapp.get_ipython()  # started once per session
    ip.run_line_magic("load_ext", "gradcheck_l2c")
    return ip


@pytest.fixture
def ip(shell):
    """The shell with a fresh model and alpha in its namespace."""
    shell.run_cell(SETUP)
    return shell


def run(ip, line: str, cell: str):
    """Run ``%%gradcheck line`` and return the shell's execution result."""
    return ip.run_cell(f"%%gradcheck {line}\n{cell}")


def test_prints_the_report_with_the_cut_in_the_cell(ip, capsys):
    result = run(ip, "--watch alpha -o", BROKEN)
    assert result.success

    t = ip.user_ns["_"]
    assert [(f.kind, f.line) for f in t.findings] == [("item", 1)]
    assert [(w.shape, w.got_grad) for w in t.watched] == [((3,), False)]
    out = capsys.readouterr().out
    assert "1 of 1 watched tensor got no gradient" in out
    assert "1. cell [" in out and "], line 1: error: item" in out  # where the cell's execution count is
    assert active_trace() is None


def test_the_fixed_cell_has_no_findings(ip, capsys):
    run(ip, "-w alpha -o", FIXED)
    t = ip.user_ns["_"]
    assert t.findings == []
    assert [w.got_grad for w in t.watched] == [True]
    assert ip.user_ns["alpha"].grad is not None
    assert "got a gradient" in capsys.readouterr().out


def test_watch_takes_globs_and_several_names(ip):
    run(ip, "--watch *.weight --watch alpha -o", BROKEN)
    t = ip.user_ns["_"]
    assert sorted(w.shape for w in t.watched) == [(1, 3), (3,)]
    assert {w.shape: w.got_grad for w in t.watched} == {(1, 3): True, (3,): False}


def test_watch_takes_quoted_names_as_the_docstring_shows(ip):
    run(ip, """--watch '*.weight' --watch "alpha" -o""", BROKEN)
    assert sorted(w.shape for w in ip.user_ns["_"].watched) == [(1, 3), (3,)]


def test_a_mistyped_watch_name_beside_good_ones_warns_and_keeps_the_report(ip, capsys):
    result = run(ip, "--watch alpha --watch alpah -o", BROKEN)
    assert result.success and [f.kind for f in ip.user_ns["_"].findings] == ["item"]
    out = capsys.readouterr().out
    assert "gradcheck-l2c: warning: --watch pattern 'alpah' matched no tensor" in out
    assert "error: item" in out


def test_render_shows_the_graph_of_the_backward_that_missed(ip, monkeypatch):
    shown = []
    monkeypatch.setattr(magic, "display", shown.append)
    run(ip, "--watch alpha --render", BROKEN)
    assert len(shown) == 1
    assert isinstance(shown[0], graphviz.Digraph)
    assert "tomato" in shown[0].source  # the watched tensor that got no gradient


def test_html_shows_the_report_inline_with_the_cut_line_marked(ip, monkeypatch):
    shown = []
    monkeypatch.setattr(magic, "display", shown.append)
    run(ip, "--watch alpha --html", BROKEN)
    (block,) = [item.data for item in shown]
    assert '<tr class="line error" id="' in block and "torch.softmax(alpha, 0)[0].item()" in block
    assert "<code>cell [" in block and "GC001 item" in block
    assert 'src="data:image/svg+xml;base64,' in block or "graph 1:" in block


def test_without_output_flag_returns_nothing(ip):
    result = run(ip, "--watch alpha", FIXED)
    assert result.result is None


def test_an_error_in_the_cell_still_ends_the_trace_and_reports(ip, capsys):
    run(ip, "--watch alpha", "scale = torch.softmax(alpha, 0)[0].item()\n1 / 0\n")
    out = capsys.readouterr().out
    assert "ZeroDivisionError" in out
    assert "gradcheck-l2c:" in out
    assert active_trace() is None


@pytest.mark.parametrize(
    ("line", "words"),
    [("--bogus", "unrecognized arguments: --bogus"), ("--watch *.alpah", "'*.alpah' matched no tensor")],
    ids=["unknown-option", "unmatched-watch"],
)
def test_usage_errors_are_one_line(ip, line, words):
    result = run(ip, line, FIXED)
    assert isinstance(result.error_in_exec, UsageError)
    assert words in str(result.error_in_exec)
    assert active_trace() is None
