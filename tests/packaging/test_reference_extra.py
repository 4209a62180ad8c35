"""The ``[reference]`` extra declares what the bundled reference imports, and the demo names it when missing."""
from __future__ import annotations

import ast
import configparser
import re
import sys
from pathlib import Path

import pytest

from gradcheck_l2c import demo
from gradcheck_l2c.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
#: Import names whose distribution is named otherwise.
DISTRIBUTION = {"sklearn": "scikit-learn"}
NOT_EXTRA = {"torch", "reference", "__future__"}


def third_party_imports(top_level_only: bool) -> set[str]:
    """Top-level names of what ``reference/*.py`` imports from outside the stdlib, torch and itself."""
    found: set[str] = set()
    for path in (ROOT / "reference").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in (tree.body if top_level_only else ast.walk(tree)):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.split(".")[0])
    return {name for name in found if name not in sys.stdlib_module_names and name not in NOT_EXTRA}


def declared_extra(name: str) -> set[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    lines = config["options.extras_require"][name].split("\n")
    return {re.split(r"[\s;<>=!~\[]", line.strip())[0] for line in lines if line.strip()}


def test_every_import_of_the_reference_is_in_the_reference_extra():
    imported = third_party_imports(top_level_only=False)
    assert {"tqdm", "numpy", "matplotlib", "torchvision"} <= imported
    assert {DISTRIBUTION.get(name, name) for name in imported} <= declared_extra("reference")


def test_the_demo_checks_every_module_the_reference_imports_at_load():
    assert set(demo.REFERENCE_NEEDS) == third_party_imports(top_level_only=True)


def test_demo_without_the_extra_names_the_missing_module_and_the_install(monkeypatch, tmp_path):
    monkeypatch.setattr(demo, "REFERENCE_NEEDS", ("tqdm", "gradcheck_l2c_no_such_module"))
    with pytest.raises(UsageError) as error:
        demo.run_demo(str(tmp_path / "out"))
    assert "needs gradcheck_l2c_no_such_module:" in str(error.value)
    assert "pip install 'gradcheck-l2c[reference]'" in str(error.value)
    assert not (tmp_path / "out").exists()
