"""Reports shared by the HTML tests: the L2C question's script traced once, and a script whose file name and
source try to inject HTML."""
from pathlib import Path

import pytest

from gradcheck_l2c.cli import main

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "reference" / "seed_l2c.py"
#: A file name and a comment that would run script if the report did not escape them.
HOSTILE_NAME = "<img src=x onerror=window.pwned=1>.py"
HOSTILE_SOURCE = """import torch

w = torch.nn.Parameter(torch.ones(2))
scale = w.sum().item()  # </script><script>window.pwned=2</script>
loss = (torch.ones(2, requires_grad=True) * scale).sum()
loss.backward()
"""


@pytest.fixture(scope="session")
def seed_lines():
    """Lines of reference/seed_l2c.py: ``item`` (the cut), ``symptom`` (where alpha.grad is printed as None)."""
    lines = SEED.read_text().splitlines()
    return {"item": next(n for n, line in enumerate(lines, 1) if ".item() * delta_theta" in line),
            "symptom": next(n for n, line in enumerate(lines, 1) if "print(f'gradient of alpha is" in line)}


@pytest.fixture(scope="session")
def seed_report(tmp_path_factory):
    """``gradcheck-l2c trace --html DIR reference/seed_l2c.py``: the folder written."""
    out = tmp_path_factory.mktemp("seed-html") / "report"  # a folder the trace creates
    assert main(["trace", "-q", "--html", str(out), str(SEED)]) == 1
    return out


@pytest.fixture(scope="session")
def hostile_report(tmp_path_factory):
    """The report of a script whose file name and traced line hold HTML."""
    folder = tmp_path_factory.mktemp("hostile-html")
    script = folder / HOSTILE_NAME
    script.write_text(HOSTILE_SOURCE)
    out = folder / "report"
    assert main(["trace", "-q", "--html", str(out), str(script)]) == 1
    return out
