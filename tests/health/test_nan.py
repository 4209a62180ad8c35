"""`trace(nan=True)` / ``--nan``: the first NaN or Inf is named at the op that made it, forward or backward,
with its input there and a fix for the cause; fixed twins and traces without ``nan`` stay silent."""
from __future__ import annotations

import torch

from gradcheck_l2c.cli import main
from tests.conftest import Snippet

WHERE_TRAP = """
import torch
x = torch.tensor([[1.0, 0.0], [2.0, 3.0]], requires_grad=True)
y = torch.where(x > 0, torch.log(x), torch.zeros_like(x))  # <- born
y.sum().backward()
"""
WHERE_FIXED = """
import torch
x = torch.tensor([[1.0, 0.0], [2.0, 3.0]], requires_grad=True)
y = torch.where(x > 0, torch.log(torch.where(x > 0, x, 1.0)), torch.zeros_like(x))
y.sum().backward()
"""
DATA = """
import torch
model = torch.nn.Linear(3, 1)
x = torch.tensor([[1.0, float("nan"), 2.0], [0.5, 0.5, 0.5]])
loss = model(x).pow(2).mean()  # <- data
loss.backward()
"""
FP16 = """
import torch
x = torch.full((2, 3), 12.0, dtype=torch.float16, requires_grad=True)
e = torch.exp(x)  # <- born
p = e / e.sum(-1, keepdim=True)  # <- symptom
p.sum().backward()
"""


def _non_finite(t):
    return [f for f in t.findings if f.kind == "non_finite"]


def test_where_trap_is_named_at_the_log_its_backward_made_nan(tmp_path):
    snippet = Snippet(tmp_path / "trap.py", WHERE_TRAP)
    (finding,) = _non_finite(snippet.run(nan=True))
    assert (finding.severity, finding.line) == ("error", snippet.line("born"))
    assert "backward of log" in finding.message and "index (0, 1)" in finding.message
    assert "torch.where to the input" in finding.fix


def test_fixed_twin_and_a_trace_without_nan_are_silent(tmp_path):
    assert not _non_finite(Snippet(tmp_path / "fixed.py", WHERE_FIXED).run(nan=True))
    assert not _non_finite(Snippet(tmp_path / "trap.py", WHERE_TRAP).run())


def test_nan_from_the_data_is_said_to_come_from_the_data(tmp_path):
    snippet = Snippet(tmp_path / "data.py", DATA)
    (finding,) = _non_finite(snippet.run(nan=True))
    assert (finding.severity, finding.line) == ("error", snippet.line("data"))
    assert "came in from the data" in finding.message and "index (0, 1)" in finding.message


def test_half_precision_overflow_is_an_error_where_exp_overflowed_with_the_nan_as_symptom(tmp_path):
    snippet = Snippet(tmp_path / "fp16.py", FP16)
    (finding,) = _non_finite(snippet.run(nan=True))
    assert (finding.severity, finding.line) == ("error", snippet.line("born"))
    assert "overflowed float16" in finding.message
    assert [r.line for r in finding.related] == [snippet.line("symptom")]


def test_an_inf_that_never_turns_nan_is_a_warning(tmp_path):
    snippet = Snippet(tmp_path / "inf.py", """
        import torch
        w = torch.ones(3, requires_grad=True)
        p = torch.tensor([0.5, 0.0, 0.25])
        masked = torch.log(p).clamp_min(-10) + w  # <- born
        print(masked.isinf().sum())
        """)
    (finding,) = _non_finite(snippet.run(nan=True))
    assert (finding.severity, finding.line) == ("warning", snippet.line("born"))
    assert "log of 0" in finding.message


def test_checking_changes_no_result_bitwise(tmp_path):
    code = """
        import torch
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 1))
        x = torch.randn(16, 4)
        loss = (model(x).sqrt() - 1).pow(2).mean()
        loss.backward()
        """
    grads = []
    for nan in (False, True):
        t = Snippet(tmp_path / f"same{nan}.py", code).run(nan=nan)
        grads.append([p.grad.clone() for p in t.namespace["model"].parameters()])
    assert all(torch.equal(a.view(torch.int32), b.view(torch.int32)) for a, b in zip(*grads))  # NaN too


def test_cli_nan_option_reports_the_line(tmp_path, capsys):
    script = Snippet(tmp_path / "trap.py", WHERE_TRAP)
    assert main(["trace", "--nan", str(script.path)]) == 1
    assert f"trap.py:{script.line('born')}: error: non_finite" in capsys.readouterr().err


def test_pytest_option_fails_a_traced_test_at_the_line_that_made_the_nan(pytester):
    pytester.makepyfile(test_loss="""
        import torch

        def test_step():
            x = torch.tensor([0.0, 2.0], requires_grad=True)
            y = torch.where(x > 1, torch.log(x), x)
            y.sum().backward()
        """)
    result = pytester.runpytest("--gradcheck", "--gradcheck-nan")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*test_loss.py:5: error: non_finite*"])


def test_an_inf_mask_that_never_makes_a_nan_is_silent(tmp_path):
    snippet = Snippet(tmp_path / "mask.py", """
        import torch
        scores = torch.randn(2, 4, requires_grad=True)
        mask = torch.tensor([[False, True, False, False], [False, False, True, True]])
        weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
        weights.sum().backward()
        """)
    assert not _non_finite(snippet.run(nan=True))
