"""Item 2 of the hostile-conditions issue: ``os.fork()`` in a traced script.

The child goes on (traced, silently) and ends with its own exit status, whether through ``sys.exit``,
``os._exit`` or the end of the script; only the parent prints a report and writes the JSON.
"""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR")}

SCRIPT = """
import os
import sys
import torch

w = torch.randn(3, requires_grad=True)
torch.tensor(w.sum().item(), requires_grad=True).backward()  # a cut, so the parent has a finding
pid = os.fork()
if pid == 0:
    (w * 2).sum().backward()
    print("child", flush=True)
    {child_exit}
else:
    _, status = os.waitpid(pid, 0)
    print("parent saw child status", os.waitstatus_to_exitcode(status), flush=True)
"""


@pytest.mark.parametrize(("child_exit", "status"), [
    ("sys.exit(0)", 0),
    ("sys.exit(3)", 3),
    ("os._exit(5)", 5),
    ("raise SystemExit('bye')", 1),
    ("pass  # to the end of the script", 0),
])
def test_only_the_parent_reports_and_the_child_keeps_its_exit_status(tmp_path, child_exit, status):
    script = tmp_path / "forks.py"
    script.write_text(SCRIPT.format(child_exit=child_exit))
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "--json", "r.json", "forks.py"],
                            cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert f"parent saw child status {status}\n" in result.stdout
    assert result.stdout.count("child\n") == 1
    assert result.returncode == 1  # the parent's own finding
    assert result.stderr.count("gradcheck-l2c: 1 of") == 1  # one report, the parent's
    assert result.stderr.count("wrote the JSON report") == 1
    document = json.loads((tmp_path / "r.json").read_text())
    assert [f["kind"] for f in document["findings"]][:1] == ["item"]
