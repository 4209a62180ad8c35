"""Item 10 of "Nothing lost, nothing changed": the wheel installs no generic top-level ``reference`` package.

The reference L2C stays in the repository's ``reference/`` folder and installs as ``gradcheck_l2c_reference``;
its modules import each other relatively, so they work under either name. (tests/packaging builds the wheel
itself and checks its file names; this reads the same configuration setuptools builds it from, in-process.)
"""
import ast
from pathlib import Path

from setuptools.config.setupcfg import read_configuration

ROOT = Path(__file__).resolve().parents[2]


def test_the_distribution_installs_only_names_of_its_own():
    options = read_configuration(ROOT / "setup.cfg")["options"]
    top_level = {name.split(".")[0] for name in options["packages"]}
    assert top_level == {"gradcheck_l2c", "gradcheck_l2c_reference"}
    assert options["package_dir"] == {"gradcheck_l2c_reference": "reference"}
    folders = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "gradcheck_l2c").rglob("__init__.py")}
    assert folders <= set(options["packages"])  # every subpackage of the tool ships


def test_the_reference_never_imports_itself_by_the_repository_folder_name():
    absolute = []
    for path in (ROOT / "reference").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            absolute += [f"{path.name}: {name}" for name in names if name.split(".")[0] == "reference"]
    assert absolute == []
