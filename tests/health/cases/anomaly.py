"""What anomaly mode points at for each case of the corpus, for the README's side-by-side column.

    python -m tests.health.cases.anomaly

Runs each bug.py under torch.autograd.set_detect_anomaly(True) and prints the backward node anomaly mode names
and the line of its forward traceback in the script (or that it raised nothing).
"""
from __future__ import annotations

import contextlib
import io
import re
import warnings

import torch

from gradcheck_l2c.runner import ScriptRunner, run_script
from tests.health.test_cases import CASES, CASES_DIR


def anomaly_points_at(case: str) -> str:
    path = CASES_DIR / case / "bug.py"
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()), torch.autograd.set_detect_anomaly(True):
        warnings.simplefilter("always")
        outcome = run_script(ScriptRunner(str(path)))
    error = outcome.exception
    if error is None:
        return "nothing (no NaN in a backward output)"
    node = re.search(r"Function '(\w+)' returned nan", str(error))
    lines = [int(n) for w in caught for n in re.findall(rf'{re.escape(str(path))}", line (\d+)', str(w.message))]
    where = f"line {lines[-1]}" if lines else "no line"
    return f"{node.group(1) if node else type(error).__name__} at {where}"


if __name__ == "__main__":
    for entry in CASES:
        print(f"{entry['case']}: {anomaly_points_at(entry['case'])}")
