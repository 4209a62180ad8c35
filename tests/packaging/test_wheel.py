"""The built sdist and wheel: clean metadata, and an install beside the user's own torch that leaves it alone.

The venv gets an older torch first (a CPU build on this machine's disk), then the wheel, as a user who
already trains with that torch would install the tool. Building and the venv take a minute or two:
`make test` and CI run this; ``GRADCHECK_L2C_SKIP_WHEEL=1`` skips it in a quick local run.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.environ.get("GRADCHECK_L2C_SKIP_WHEEL") == "1",
                                reason="GRADCHECK_L2C_SKIP_WHEEL=1")

ROOT = Path(__file__).resolve().parents[2]
#: The user's torch: any release the package supports other than the dev pin in requirements.txt.
OTHER_TORCH = os.environ.get("GRADCHECK_L2C_OTHER_TORCH", "2.13.0+cpu")
#: Top-level modules only the extras bring; the wheel must not pull them in, importing it must not load them.
EXTRA_ONLY = ("reference", "torchvision", "matplotlib", "tqdm", "sklearn")
EXTRA_DISTRIBUTIONS = ("torchvision", "tqdm", "matplotlib", "scikit-learn")
#: Not part of the source tree: virtual environments, build output, caches.
NOT_SOURCE = shutil.ignore_patterns(".git", ".venv*", "dist", "build", "*.egg-info", "__pycache__",
                                    ".pytest_cache", "gradcheck-out", "runs", ".ipynb_checkpoints")

BROKEN = """\
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    inputs = torch.randn(4, 3)
    prediction = model(inputs).mean().item()
    loss = torch.tensor(prediction, requires_grad=True) ** 2
    loss.backward()
    print(model.weight.grad)
"""
ITEM_LINE = 7
FIXED = BROKEN.replace(".mean().item()", ".mean()").replace("torch.tensor(prediction, requires_grad=True)",
                                                             "prediction")


def run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run outside this checkout: without PYTHONPATH the fresh venv sees only what was installed into it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def checked(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    result = run(*command, cwd=cwd)
    assert result.returncode == 0, f"{command} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """``python -m build`` on a copy of the source tree: the sdist, then the wheel built from that sdist."""
    work = tmp_path_factory.mktemp("build")
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    checked(sys.executable, "-m", "build", "--outdir", work / "dist", source)
    (sdist,) = (work / "dist").glob("*.tar.gz")
    (wheel,) = (work / "dist").glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> dict[str, object]:
    """A fresh venv holding the user's torch, then the wheel installed into it; pip's log of that install."""
    home = tmp_path_factory.mktemp("venv") / "venv"
    checked(sys.executable, "-m", "venv", home)
    python = home / "bin" / "python"
    checked(python, "-m", "pip", "install", "--quiet", "--only-binary=:all:", f"torch=={OTHER_TORCH}")
    log = checked(python, "-m", "pip", "install", dist["wheel"])
    return {"python": python, "bin": home / "bin", "log": log.stdout + log.stderr}


def wheel_metadata(wheel: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The wheel's file names and its METADATA fields (each field's values in order)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (path,) = [name for name in names if name.endswith(".dist-info/METADATA")]
        message = Parser().parsestr(archive.read(path).decode())
    fields: dict[str, list[str]] = {}
    for key, value in message.items():
        fields.setdefault(key, []).append(value)
    return names, fields


def test_twine_accepts_the_sdist_and_the_wheel(dist):
    result = checked(sys.executable, "-m", "twine", "check", "--strict", dist["sdist"], dist["wheel"])
    assert result.stdout.count("PASSED") == 2, result.stdout


def test_the_package_requires_a_torch_range_and_graphviz_only(dist):
    _, fields = wheel_metadata(dist["wheel"])
    requires = fields["Requires-Dist"]
    base = sorted(r for r in requires if "extra ==" not in r)
    assert base == ["graphviz", "torch>=2.1"]
    assert {"reference", "notebook", "test"} <= set(fields["Provides-Extra"])
    reference = {r.split(";")[0].strip() for r in requires if "extra == \"reference\"" in r}
    assert set(EXTRA_DISTRIBUTIONS) <= reference
    assert fields["Requires-Python"] == [">=3.10"]
    assert fields["Description-Content-Type"] == ["text/markdown"]


def test_the_wheel_ships_the_tool_and_the_reference_but_no_tests(dist):
    names, _ = wheel_metadata(dist["wheel"])
    assert "gradcheck_l2c/cli.py" in names
    assert "gradcheck_l2c_reference/seed_l2c.py" in names
    assert {name.split("/")[0] for name in names if "/" in name and not name.split("/")[0].endswith(
        (".dist-info", ".data"))} == {"gradcheck_l2c", "gradcheck_l2c_reference"}  # no generic top-level name
    assert not [name for name in names if name.startswith(("tests/", "benchmarks/", "notebooks/"))]
    (entry_points,) = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    with zipfile.ZipFile(dist["wheel"]) as archive:
        text = archive.read(entry_points).decode()
    assert "gradcheck-l2c = gradcheck_l2c.cli:main" in text
    assert "gradcheck_l2c = gradcheck_l2c.plugin" in text
    with tarfile.open(dist["sdist"]) as archive:
        top = {Path(name).relative_to(Path(name).parts[0]).as_posix() for name in archive.getnames()
               if len(Path(name).parts) > 1}
    assert {"setup.cfg", "pyproject.toml", "README.md", "gradcheck_l2c/tracer.py", "reference/l2c.py"} <= top


def test_installing_the_wheel_leaves_the_users_torch_in_place(venv):
    assert "Uninstalling torch" not in venv["log"], venv["log"]
    versions = checked(venv["python"], "-c", textwrap.dedent("""\
        import importlib.metadata as metadata, json
        names = ("torch", "gradcheck-l2c", "graphviz", "torchvision", "tqdm", "matplotlib", "scikit-learn")
        found = {}
        for name in names:
            try:
                found[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                found[name] = None
        print(json.dumps(found))
    """)).stdout
    found = json.loads(versions)
    assert found["torch"] == OTHER_TORCH
    assert found["gradcheck-l2c"] and found["graphviz"]
    assert [name for name in EXTRA_DISTRIBUTIONS if found[name]] == []


def test_trace_in_the_users_venv_reports_the_cut_and_passes_the_fix(venv, tmp_path):
    (tmp_path / "broken.py").write_text(textwrap.dedent(BROKEN))
    (tmp_path / "fixed.py").write_text(textwrap.dedent(FIXED))
    command = venv["bin"] / "gradcheck-l2c"

    broken = run(command, "trace", "--json", "broken.json", "broken.py", cwd=tmp_path)
    assert broken.returncode == 1, broken.stderr
    assert broken.stdout == "None\n"
    findings = json.loads((tmp_path / "broken.json").read_text())["findings"]
    items = [(f["kind"], f["tensor"], f["line"]) for f in findings if f["kind"] == "item"]
    # the bias went through the same .item(); reading weight.grad asks for the whole layer
    assert sorted(items) == [("item", "Linear.bias", ITEM_LINE), ("item", "Linear.weight", ITEM_LINE)]
    assert f"broken.py:{ITEM_LINE}: error: item" in broken.stderr

    fixed = run(command, "trace", "--json", "fixed.json", "fixed.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads((tmp_path / "fixed.json").read_text())["findings"] == []


def test_demo_without_the_reference_extra_says_what_to_install(venv, tmp_path):
    result = run(venv["bin"] / "gradcheck-l2c", "demo", "--out", "out", cwd=tmp_path)
    assert result.returncode == 2
    assert "pip install 'gradcheck-l2c[reference]'" in result.stderr
    assert result.stdout == ""


def test_importing_the_tool_in_the_users_venv_loads_no_extra(venv, tmp_path):
    probe = textwrap.dedent(f"""\
        import sys
        import gradcheck_l2c, gradcheck_l2c.cli, gradcheck_l2c.tracer
        import torch
        w = torch.ones(2, requires_grad=True)
        with gradcheck_l2c.trace() as t:
            (w * 2).sum().backward()
        assert t.findings == [], t.findings
        print(" ".join(sorted(name for name in sys.modules if name.split(".")[0] in {EXTRA_ONLY!r})))
    """)
    loaded = checked(venv["python"], "-c", probe, cwd=tmp_path).stdout.split()
    assert loaded == []
