"""Item 6 of the hostile-conditions issue: the front doors' edges.

- ``%%gradcheck`` on a cell that raises shows the report, then raises the cell's exception again (its
  traceback shown once), so "Run All" and nbclient stop there;
- ``--watch`` that matched nothing once the script ran is exit 2 with the tensors it saw;
- ``GRADCHECK_L2C_DISABLED=1`` turns ``assert_grad_reaches`` into a no-op like every entry point.
"""
import os
import subprocess
import sys

import pytest
import torch

from gradcheck_l2c import assert_grad_flows, assert_grad_reaches, trace
from gradcheck_l2c.runner import EXIT_USAGE

ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR")}


def test_a_failing_cell_shows_the_report_then_raises_its_exception(capsys):
    pytest.importorskip("IPython")
    from IPython.testing import globalipapp

    ip = globalipapp.start_ipython() or globalipapp.get_ipython()  # the one shell of the session
    ip.run_line_magic("load_ext", "gradcheck_l2c")
    ip.run_line_magic("reset", "-f")  # the tensors another test file's cells left in the shared shell
    result = ip.run_cell("%%gradcheck\nimport torch\nw = torch.ones(3, requires_grad=True)\n"
                         "torch.tensor(w.sum().item(), requires_grad=True).backward()\n"
                         "raise ValueError('the cell failed')\n")
    assert not result.success
    assert isinstance(result.error_in_exec, ValueError)
    assert str(result.error_in_exec) == "the cell failed"
    out = capsys.readouterr().out
    assert "gradcheck-l2c: 1 of 2 watched tensors got no gradient (w)" in out
    assert out.index("got no gradient") < out.index("ValueError: the cell failed")
    assert out.count("ValueError: the cell failed") == 1  # its traceback once, after the report


def test_watch_matching_nothing_after_a_run_is_exit_2_with_the_tensors_seen(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\nalpha = torch.ones(3, requires_grad=True)\n"
                      "torch.tensor(alpha.sum().item(), requires_grad=True).backward()\nprint('ran')\n")
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "--watch", "alpah", str(script)],
                            env=ENV, capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (EXIT_USAGE, "ran\n")
    assert result.stderr.splitlines()[-1].startswith(
        "gradcheck-l2c: error: --watch pattern 'alpah' matched no tensor; the tensors seen were: alpha")


def test_disabled_makes_the_assertions_no_ops(monkeypatch):
    w = torch.ones(3, requires_grad=True)
    cut = torch.tensor(w.sum().item(), requires_grad=True) * 2
    with pytest.raises(AssertionError):
        assert_grad_reaches(cut, w)
    monkeypatch.setenv("GRADCHECK_L2C_DISABLED", "1")
    assert_grad_reaches(cut, w)
    assert_grad_reaches("not even a tensor", w)  # a no-op checks nothing
    assert assert_grad_flows(lambda: None).disabled
    with trace() as t:
        cut.backward()
    assert t.disabled and t.findings == []
