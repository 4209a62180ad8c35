"""The NaN/Inf corpus in tests/health/cases/: small scripts with the shape of real public reports, each with a
fixed twin. With ``nan=True`` each bug's first non_finite finding must be at the line marked ``# <- nan``
with the case's severity; every fixed twin must get no non_finite finding at all."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from gradcheck_l2c.runner import ScriptRunner, run_script
from gradcheck_l2c.tracer import trace

CASES_DIR = Path(__file__).resolve().parent / "cases"
CASES = json.loads((CASES_DIR / "expected.json").read_text())
#: Cases the detector does not name yet, with what it said instead; strict, so fixing one fails its xfail.
KNOWN_MISSES: dict[str, str] = {}


def marked_line(path: Path) -> int:
    """The line a case marks with ``# <- nan``: where the fix goes."""
    (line,) = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text.rstrip().endswith("# <- nan")]
    return line


def non_finite(path: Path) -> list:
    tracer = trace(nan=True)
    run_script(ScriptRunner(str(path)), tracer)
    return [f for f in tracer.findings if f.kind == "non_finite"]


def _params():
    for case in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case["case"]])] \
            if case["case"] in KNOWN_MISSES else []
        yield pytest.param(case, id=case["case"], marks=marks)


@pytest.mark.parametrize("case", list(_params()))
def test_first_non_finite_is_named_at_its_line(case, one_torch_thread, capsys):
    path = CASES_DIR / case["case"] / "bug.py"
    found = non_finite(path)
    assert found, "no non_finite finding"
    severity = _expected_severity(case)
    first = next((f for f in found if f.severity == severity), found[0])
    assert (Path(first.file).name, first.line, first.severity) == ("bug.py", marked_line(path), severity)


def _expected_severity(case: dict) -> str:
    """The case's severity on this torch: an Inf that older torch lets turn into a NaN (clamp's backward at
    its bound) is an error there."""
    older = tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 14)
    return case.get("severity_before_torch_2_14", case["severity"]) if older else case["severity"]


@pytest.mark.parametrize("case", [pytest.param(c, id=c["case"]) for c in CASES])
def test_fixed_twin_is_silent(case, one_torch_thread, capsys):
    assert non_finite(CASES_DIR / case["case"] / "fixed.py") == []
