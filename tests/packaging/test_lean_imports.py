"""Importing and running the tool loads no extra-only dependency, even where the extras are installed.

``pip install gradcheck-l2c`` brings torch and graphviz only; torchvision, tqdm, matplotlib and
scikit-learn come with ``[reference]``, LibCST with ``[fix]``. A module of ``gradcheck_l2c`` that imported one of them (or the
bundled ``reference`` package) would break in a user's environment, so each check runs in a fresh
interpreter of this venv, which has them all, and reads ``sys.modules`` afterwards, less what
``import torch`` alone loads (``torch.hub`` picks up tqdm when it is there).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

EXTRA_ONLY = {"reference", "torchvision", "matplotlib", "tqdm", "sklearn", "libcst"}
#: Loaded by the notebook and pytest front doors (magic, plugin), never by the tracer or the CLI.
FRONT_DOOR_ONLY = {"IPython", "pytest"}


def loaded_roots(code: str, cwd: Path) -> set[str]:
    """Run ``code`` in a fresh interpreter, then return the top-level names of every module it had loaded."""
    probe = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return {name.split(".")[0] for name in json.loads(result.stdout.splitlines()[-1])}


def test_tracing_a_script_through_the_cli_loads_no_extra(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent("""\
        import torch
        w = torch.randn(3, requires_grad=True)
        scale = w.sum().item()
        loss = torch.tensor(scale, requires_grad=True) * 2
        loss.backward()
    """))
    roots = loaded_roots("""
        import gradcheck_l2c, gradcheck_l2c.cli, gradcheck_l2c.tracer
        from gradcheck_l2c.cli import main
        assert main(["trace", "--json", "report.json", "train.py"]) == 1
    """, tmp_path)
    assert "torch" in roots
    assert (roots - loaded_roots("import torch", tmp_path)) & (EXTRA_ONLY | FRONT_DOOR_ONLY) == set()
    findings = json.loads((tmp_path / "report.json").read_text())["findings"]
    assert ("item", 3) in [(f["kind"], f["line"]) for f in findings if f["tensor"] == "w"]


def test_importing_the_package_loads_neither_torch_nor_an_extra(tmp_path):
    roots = loaded_roots("import gradcheck_l2c", tmp_path)
    assert roots & (EXTRA_ONLY | FRONT_DOOR_ONLY | {"torch"}) == set()


def test_no_module_of_the_package_imports_an_extra(tmp_path):
    roots = loaded_roots("""
        import importlib, pkgutil
        import gradcheck_l2c
        for module in pkgutil.walk_packages(gradcheck_l2c.__path__, "gradcheck_l2c."):
            if not module.name.endswith(".__main__"):  # running the CLI is the first test's job
                importlib.import_module(module.name)
    """, tmp_path)
    assert "gradcheck_l2c" in roots and "IPython" in roots  # the walk reached magic.py
    assert (roots - loaded_roots("import torch", tmp_path)) & EXTRA_ONLY == set()


def test_the_cli_answers_help_version_and_rules_without_loading_torch(tmp_path):
    """``gradcheck-l2c --version`` took two seconds while ``import torch`` ran for nothing."""
    roots = loaded_roots("""
        import contextlib, io
        from gradcheck_l2c.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["--version"]) == 0
            assert main(["rules"]) == 0
            try:
                main(["trace", "--help"])
            except SystemExit as done:
                assert done.code == 0
        assert "gradcheck-l2c" in out.getvalue() and "GC" in out.getvalue() and "--json" in out.getvalue()
    """, tmp_path)
    assert "gradcheck_l2c" in roots and "torch" not in roots
