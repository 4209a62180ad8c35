"""Item 6 of "Nothing lost, nothing changed": SIGTERM (a CI job's timeout) during a traced run writes the
report of what ran and a one-line notice, then ends with 143 as the untraced script would."""
import json
import os
import signal
import subprocess
import sys
import time

ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR")}
SCRIPT = """
import pathlib, time, torch
w = torch.ones(3, requires_grad=True)
b = torch.ones(3, requires_grad=True)
(w * 2 + b.detach()).sum().backward()
pathlib.Path("ready").write_text("")
while True:
    time.sleep(0.05)
"""


def test_sigterm_writes_the_report_and_a_notice_then_exits_143(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    process = subprocess.Popen([sys.executable, "-m", "gradcheck_l2c", "trace", "--json", "r.json", "train.py"],
                               cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert "gradcheck-l2c: the script was stopped by SIGTERM; the report covers what ran before." in stderr
    assert "Traceback" not in stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_code"] == 143
    assert [f["kind"] for f in report["findings"] if f["severity"] == "error"] == ["detach"]
