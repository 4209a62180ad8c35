"""Every folder of the package is a regular package, so ``packages = find:`` puts it into the wheel.

setuptools' ``find:`` skips a folder without ``__init__.py`` and everything under it: the checkout would
still import it (as a namespace package) while the installed wheel lacked it. The wheel test sees that
too, but it is slow and can be skipped; this check is instant.
"""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_folder_with_python_files_has_an_init():
    for top in ("gradcheck_l2c", "reference"):
        folders = {path.parent for path in (ROOT / top).rglob("*.py")}
        assert folders, top
        missing = sorted(str(folder.relative_to(ROOT)) for folder in folders if not (folder / "__init__.py").exists())
        assert missing == []
