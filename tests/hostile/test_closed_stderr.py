"""Item 5 of "Nothing lost, nothing changed": a correct script that closes ``sys.stderr`` ends with exit 0
traced as untraced, and the report is still written (on file descriptor 2, and to ``--json``)."""
import json
import os
import subprocess
import sys

ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR")}
SCRIPT = """
import sys, torch
w = torch.ones(3, requires_grad=True)
(w * 2).sum().backward()
sys.stderr.close()
print("done")
"""


def test_a_script_that_closes_stderr_exits_0_and_the_report_is_still_written(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "--json", "r.json", "train.py"],
                            cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (0, "done\n"), result.stderr
    assert "the watched tensor got a gradient" in result.stderr and "lost sys.stderr" not in result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 0
