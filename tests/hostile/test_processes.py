"""Item 9 of "Nothing lost, nothing changed": child processes started with multiprocessing run untraced, and
the report says so: an `untraced_process` warning names the line that started them and how many there were,
instead of "no findings"."""
import multiprocessing
import os
import subprocess
import sys

import pytest
import torch

from gradcheck_l2c import trace

ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR")}
SCRIPT = """
import multiprocessing
import torch

def work(seed):
    w = torch.ones(3, requires_grad=True)
    torch.tensor((w * seed).sum().item(), requires_grad=True).backward()  # a cut inside the worker
    return w.grad is None

if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print(pool.map(work, [1, 2]))
"""


def test_spawned_workers_are_reported_as_untraced_at_the_line_that_started_them(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "train.py"], cwd=tmp_path, env=ENV,
                            capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (0, "[True, True]\n"), result.stderr
    assert "train.py:11: warning: untraced_process: 1 child process" in result.stderr
    assert "ran untraced" in result.stderr


def double(queue):
    queue.put(2)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
def test_a_forked_process_is_reported_too_and_the_patch_is_removed(untouched):
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    with trace() as t:
        w = torch.ones(2, requires_grad=True)
        (w * 2).sum().backward()
        process = context.Process(target=double, args=(queue,))
        process.start()
        start_line = sys._getframe().f_lineno - 1
        process.join()
    assert queue.get(timeout=30) == 2 and process.exitcode == 0
    found = [(f.kind, f.line, f.count) for f in t.findings if f.kind == "untraced_process"]
    assert found == [("untraced_process", start_line, 1)]
