"""Shared helpers: run a snippet of user code from a real file under the tracer."""
from __future__ import annotations

import importlib.util
import re
import textwrap
from pathlib import Path

import pytest
import torch

from gradcheck_l2c.tracer import Trace, trace

_MARK = re.compile(r"#\s*<-\s*(\w+)")


class Snippet:
    """A user script written to disk, with the lines marked ``# <- kind`` remembered."""

    def __init__(self, path: Path, code: str) -> None:
        self.path = path
        self.code = textwrap.dedent(code)
        path.write_text(self.code)
        self.marks: dict[str, list[int]] = {}
        for number, line in enumerate(self.code.splitlines(), start=1):
            for kind in _MARK.findall(line):
                self.marks.setdefault(kind, []).append(number)

    def line(self, kind: str) -> int:
        (number,) = self.marks[kind]
        return number

    def run(self, watch=None, **kwargs) -> Trace:
        namespace = {"__name__": "__main__", "__file__": str(self.path)}
        with trace(watch=watch, **kwargs) as t:
            self.traced = t
            exec(compile(self.code, str(self.path), "exec"), namespace)
        t.namespace = namespace
        return t

    def raising(self, error: type[BaseException], match: str) -> Trace:
        """Run it under a trace that sees it die with ``error`` matching ``match`` (as the command line's does)."""
        with pytest.raises(error, match=match):
            self.run()
        return self.traced


@pytest.fixture
def snippet(tmp_path):
    """``snippet(code)`` writes the code to ``train.py`` and returns a `Snippet` to run."""
    counter = iter(range(1000))

    def make(code: str) -> Snippet:
        return Snippet(tmp_path / f"train_{next(counter)}.py", code)

    return make


@pytest.fixture(autouse=True)
def outside_github_actions(monkeypatch):
    """The report's format follows GITHUB_ACTIONS; tests expect the default (``full``) unless they set it."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.fixture(scope="module")
def one_torch_thread():
    """Tiny convolutions gain nothing from a second thread, and lose ten-fold when the CPUs are shared."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(saved)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """``@pytest.mark.needs_torchvision``: skipped where torchvision is absent (``make test-compat`` leaves it out)."""
    if item.get_closest_marker("needs_torchvision") and importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision (the [reference] extra) is not installed")
