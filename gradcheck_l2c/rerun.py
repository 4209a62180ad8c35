"""``fix --verify``'s runs: the script's folder copied to a scratch folder (its Python files; other files are
linked), the patched texts written there, the copy run under a new trace with a step and time limit, and what
it reported mapped back to the original files and lines (the :class:`~gradcheck_l2c.fix.verifier.Rerun` the
verifier judges).

The copy runs in this process, as ``trace`` runs scripts; modules imported from the script's folder are
forgotten before and put back after, so the copy imports its own (patched) siblings.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator, Sequence
from typing import Any

from gradcheck_l2c.fix.linemap import line_map
from gradcheck_l2c.fix.verifier import Rerun
from gradcheck_l2c.records import Finding
from gradcheck_l2c.runner import Outcome, ScriptRunner, run_script

#: What the copy leaves out: caches and version control, never needed to run.
_IGNORED = shutil.ignore_patterns("__pycache__", ".git", "*.pyc", "*.orig")


def _copy_or_link(source: str, target: str) -> None:
    """Python files are copied (they may be patched); anything else (data, weights) is linked, not copied."""
    if source.endswith(".py"):
        shutil.copy2(source, target)
    else:
        os.symlink(os.path.abspath(source), target)


class LimitReached(BaseException):
    """Raised into the copy when it reached its step or time limit (a BaseException: the script's own
    ``except Exception`` does not swallow it)."""


def original_run(findings: Sequence[Finding], watched: Sequence[Any], outcome: Outcome, folder: str) -> Rerun:
    """The first trace as a :class:`Rerun`, to compare the patched runs with."""
    error, message = _error(outcome.exception, folder, {})
    return Rerun(list(findings), list(watched), error, message)


class ScratchRuns:
    """Runs the script's patched copy: ``runs(texts)`` for ``{file: (old, new)}`` gives a :class:`Rerun`.

    ``max_steps``: optimizer steps before the copy is stopped; ``max_seconds``: wall-clock seconds (main thread
    only); ``None`` for no limit."""

    def __init__(self, script: str, args: Sequence[str], *, watch: list[str] | None = None,
                 max_steps: int | None = None, max_seconds: float | None = None) -> None:
        self.script = os.path.abspath(script)
        self.folder = os.path.dirname(self.script)
        self.args = list(args)
        self.watch = watch
        self.max_steps = max_steps
        self.max_seconds = max_seconds

    def __call__(self, texts: dict[str, tuple[str, str]]) -> Rerun:
        outside = [file for file in texts if os.path.commonpath([file, self.folder]) != self.folder]
        if outside:
            return Rerun([], [], checked=False, note=f"{outside[0]} is outside the script's folder, which is copied")
        with tempfile.TemporaryDirectory(prefix="gradcheck-fix-") as scratch:
            copy = os.path.join(scratch, os.path.basename(self.folder))
            shutil.copytree(self.folder, copy, ignore=_IGNORED, copy_function=_copy_or_link)
            to_copy = {file: os.path.join(copy, os.path.relpath(file, self.folder)) for file in texts}
            for file, (_, new) in texts.items():
                if os.path.islink(to_copy[file]):  # never write through a link into the original
                    os.unlink(to_copy[file])
                with open(to_copy[file], "w", encoding="utf-8") as handle:
                    handle.write(new)
            back = {target: (file, line_map(texts[file][1], texts[file][0])) for file, target in to_copy.items()}
            return self._run(os.path.join(copy, os.path.relpath(self.script, self.folder)), copy, back)

    def _run(self, script: str, copy: str, back: dict[str, Any]) -> Rerun:
        from gradcheck_l2c.tracer import trace

        tracer = trace(watch=self.watch)
        runner = ScriptRunner(script, self.args)
        with _own_modules((self.folder, copy)), _limits(self.max_steps, self.max_seconds) as hit, \
                contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                outcome = run_script(runner, tracer)
            except LimitReached:
                outcome = Outcome()
        findings = [_mapped(finding, copy, self.folder, back) for finding in tracer.findings]
        error, message = _error(outcome.exception, copy, back, self.folder)
        note = hit[0] if hit else ""
        return Rerun(findings, tracer.watched, error, message, limited=bool(hit), note=note)


def _mapped(finding: Finding, copy: str, folder: str, back: dict[str, Any]) -> Finding:
    """``finding`` as the original files would have it: the copy's paths and lines turned back."""
    file, line = _place(finding.file, finding.line, copy, folder, back)
    related = tuple(dataclasses.replace(place, file=_place(place.file, place.line, copy, folder, back)[0],
                                        line=_place(place.file, place.line, copy, folder, back)[1])
                    for place in finding.related)
    return dataclasses.replace(finding, file=file, line=line, related=related)


def _place(file: str, line: int, copy: str, folder: str, back: dict[str, Any]) -> tuple[str, int]:
    if file in back:
        original, mapping = back[file]
        return original, mapping(line)
    if os.path.commonpath([os.path.abspath(file), copy]) == copy:
        return os.path.join(folder, os.path.relpath(file, copy)), line
    return file, line


def _error(exception: BaseException | None, copy: str, back: dict[str, Any],
           folder: str | None = None) -> tuple[tuple[str, str, int] | None, str]:
    """``(type, file, line)`` of the innermost user frame an exception came from, and a one-line message."""
    if exception is None:
        return None, ""
    frames = [frame for frame in traceback.extract_tb(exception.__traceback__)
              if os.path.commonpath([os.path.abspath(frame.filename), copy]) == copy]
    file, line = (frames[-1].filename, frames[-1].lineno or 0) if frames else ("", 0)
    if folder is not None and file:
        file, line = _place(file, line, copy, folder, back)
    text = str(exception).strip().splitlines()
    first = text[0].split(". ")[0].rstrip(".") if text else ""
    where = f" at {os.path.basename(file)}:{line}" if file else ""
    return (type(exception).__name__, file, line), f"{type(exception).__name__}{where}: {first}"


@contextlib.contextmanager
def _own_modules(folders: Sequence[str]) -> Iterator[None]:
    """Modules loaded from ``folders`` are forgotten inside the block and the earlier ones put back after."""
    def inside(module: Any) -> bool:
        path = getattr(module, "__file__", None)
        return bool(path) and any(os.path.commonpath([os.path.abspath(path), f]) == f for f in folders)

    saved = {name: module for name, module in sys.modules.items() if inside(module)}
    for name in saved:
        del sys.modules[name]
    try:
        yield
    finally:
        for name in [name for name, module in sys.modules.items() if inside(module)]:
            del sys.modules[name]
        sys.modules.update(saved)


@contextlib.contextmanager
def _limits(max_steps: int | None, max_seconds: float | None) -> Iterator[list[str]]:
    """Stop the copy with :class:`LimitReached` after ``max_steps`` optimizer steps or ``max_seconds``; the list
    it yields gets the limit that was hit."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    hit: list[str] = []
    steps = [0]

    def count(*_: Any) -> None:
        steps[0] += 1
        if max_steps is not None and steps[0] > max_steps:
            hit.append(f"{max_steps} optimizer steps")
            raise LimitReached

    def alarm(*_: Any) -> None:
        hit.append(f"{max_seconds:g} seconds")
        raise LimitReached

    handle = register_optimizer_step_pre_hook(count)
    timed = max_seconds is not None and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGALRM, alarm) if timed else None
    if timed:
        signal.setitimer(signal.ITIMER_REAL, max_seconds)
    try:
        yield hit
    finally:
        handle.remove()
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
