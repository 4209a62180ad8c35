"""Correct training programs in the shape of widely used public examples stay silent under the tracer.

Each program in ``programs/`` runs twice, untraced and under ``gradcheck-l2c trace --json``, in
processes forked from one driver (see ``driver.py``), and the traced run must change nothing:
the same stdout, the same exit status, bitwise the same final parameters; and the report must
hold no error or warning, no finding without a real ``file:line``, and no tensor said to have
got no gradient without a finding or note that explains it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).parent
_HAS_TORCHVISION = importlib.util.find_spec("torchvision") is not None


def _runs_here(program: Path) -> bool:
    """Whether this environment can run ``program``: one that imports torchvision needs it (`make test-compat`'s venv
    has none: its wheels are built for one torch release each)."""
    code = program.read_text(encoding="utf-8").split('"""', 2)[-1]  # past the docstring, which may name it
    return _HAS_TORCHVISION or ("import torchvision" not in code and "from torchvision" not in code)


PROGRAMS = sorted(p for p in (HERE / "programs").glob("*.py") if _runs_here(p))
#: Programs that still get findings they should not, with the reason (strict: fixing one fails here).
NOISY: dict[str, str] = {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """Run every program, untraced and traced, once for the whole module."""
    out = tmp_path_factory.mktemp("realworld")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0")
    env.pop("GRADCHECK_L2C_DISABLE", None)
    subprocess.run([sys.executable, str(HERE / "driver.py"), str(out), *map(str, PROGRAMS)],
                   env=env, cwd=HERE / "programs", check=True, timeout=900)
    return out


def _equal(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("program", [
    pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=NOISY[p.stem])) if p.stem in NOISY else p
    for p in PROGRAMS], ids=lambda p: p.stem)
def test_traced_run_changes_nothing_and_stays_silent(runs: Path, program: Path) -> None:
    name = program.stem
    plain, traced = (runs / f"{name}.status").read_text().split()
    report = (runs / f"{name}.traced.err").read_text()
    assert plain == "0", (runs / f"{name}.plain.err").read_text()
    assert traced == plain, report
    assert (runs / f"{name}.traced.out").read_bytes() == (runs / f"{name}.plain.out").read_bytes(), report
    before = torch.load(runs / f"{name}.plain.pt", weights_only=True)
    after = torch.load(runs / f"{name}.traced.pt", weights_only=True)
    assert _equal(before, after), "the traced run ended with different parameters"
    document = json.loads((runs / f"{name}.json").read_text())
    loud = [f"{f['file']}:{f['line']}: {f['severity']}: {f['kind']}: {f['message']}"
            for f in document["findings"] if f["severity"] in ("error", "warning")]
    assert not loud, report
    nowhere = [f for f in document["findings"] if f["file"] == "<unknown>" or f["line"] <= 0]
    assert not nowhere, nowhere
    explained = {f["tensor"] for f in document["findings"]}
    unexplained = [w["name"] for w in document["watched"] if w["got_grad"] is False and w["name"] not in explained]
    assert not unexplained, report


def test_the_corpus_is_large_enough() -> None:
    assert len(PROGRAMS) >= 25
