"""Item 7 of "Nothing lost, nothing changed": a script's own ``with gradcheck_l2c.trace():`` works under the
CLI (or inside any running trace): the inner trace joins the running one and judges by its own ``watch``."""
import torch

from gradcheck_l2c import trace
from gradcheck_l2c.cli import main
from gradcheck_l2c.tracer import active_trace

SCRIPT = """
import torch
import gradcheck_l2c

with gradcheck_l2c.trace(watch=["alpha"]) as t:
    alpha = torch.zeros(2, requires_grad=True)
    beta = torch.ones(2, requires_grad=True)
    weight = torch.softmax(alpha, 0)[0].item()
    (beta.detach() * weight + torch.ones(2, requires_grad=True)).sum().backward()
print("inner:", sorted(f.kind for f in t.findings if f.severity == "error"))
"""


def test_a_trace_inside_a_running_trace_joins_it_and_judges_by_its_own_watch(untouched):
    with trace() as outer:
        with trace(watch=["alpha"]) as inner:
            assert active_trace() is outer
            alpha = torch.zeros(2, requires_grad=True)
            beta = torch.ones(2, requires_grad=True)
            weight = torch.softmax(alpha, 0)[0].item()
            (beta.detach() * weight + torch.ones(2, requires_grad=True)).sum().backward()
        assert active_trace() is outer
    assert [f.kind for f in inner.findings if f.severity == "error"] == ["item"]
    assert sorted(f.kind for f in outer.findings if f.severity == "error") == ["detach", "item"]


def test_a_script_with_its_own_trace_runs_under_the_cli_as_under_python(tmp_path, monkeypatch, capsys, untouched):
    (tmp_path / "train.py").write_text(SCRIPT)
    monkeypatch.chdir(tmp_path)
    assert main(["trace", "train.py"]) == 1  # the CLI's own report has the two cuts
    out, err = capsys.readouterr()
    assert out == "inner: ['item']\n"
    assert "NestedTraceError" not in err and "detach" in err and "item" in err


def test_a_trace_that_joined_once_runs_on_its_own_later(untouched):
    inner = trace()
    with trace():
        with inner:
            pass
    with inner:  # no trace runs now: it installs and records itself
        assert active_trace() is inner
        w = torch.ones(2, requires_grad=True)
        (w.detach() * 2 + torch.ones(2, requires_grad=True)).sum().backward()
    assert active_trace() is None and not w._post_accumulate_grad_hooks  # its hooks removed: it ended
    assert [f.kind for f in inner.findings if f.severity == "error"] == ["detach"]
