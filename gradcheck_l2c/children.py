"""Child processes a traced script starts with multiprocessing (spawn, forkserver and fork; Process, Pool,
ProcessPoolExecutor, torch.multiprocessing.spawn) run under a trace of their own, and their findings join the
parent's report, each marked with the process it came from.

Just before ``Process.start`` the parent wraps the child's target in :class:`TracedTarget` (pickled with the
process for spawn and forkserver, copied by fork) and puts the original back right after. In the child it
traces the target and writes the result as a torchrun rank does (present/merge.py) to a folder the parent
reads when its trace ends. ``with Pool(...)`` ends its workers with SIGTERM: a worker writes its result on that
signal, then dies of it as it would have; one killed so before its trace could catch the signal (a worker still
starting, a spawned one importing torch) ran nothing of the script's and is not reported. A child that cannot be
traced is left as it is and reported (GC023).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from typing import Any, Callable

from gradcheck_l2c.launch import process_alive
from gradcheck_l2c.present.merge import RankResult, read_results, write_result

#: The longest a trace that ends waits for non-daemon children still running that have not reported yet
#: (daemon ones, a Pool's workers, only end at exit, after the report: they are not waited for).
CHILD_WAIT = 5.0
_POLL = 0.05
#: Why a child that ended without writing its result is not in the report.
LOST = "it ended without a report: killed, or still running when the trace ended"
RUNNING = "a daemon process, such as a Pool's worker, still running when the trace ended: close the pool first"


class ChildProcesses:
    """The children one trace starts: each is traced in its process, and their results are read when the
    trace ends. ``new_trace()`` makes a child's trace and ``active()`` says which trace runs (both picklable,
    since a spawned child gets them with its target); ``untraced(site, why)`` records a child that could not
    be traced."""

    def __init__(self, new_trace: Callable[[], Any], active: Callable[[], Any],
                 untraced: Callable[[Any, str], None]) -> None:
        self.new_trace, self.active, self.untraced = new_trace, active, untraced
        self.folder: str | None = None
        # (site of the start, pid, daemon, the Process weakly: a Pool's many workers keep no pipes open for the trace)
        self.started: list[tuple[Any, int, bool, weakref.ref[BaseProcess]]] = []

    def start(self, process: BaseProcess, site: Any, start: Callable[[], Any]) -> Any:
        """``Process.start`` under the trace: the child's target wrapped while it starts, then put back."""
        if type(process).run is not BaseProcess.run:
            self.untraced(site, f"{type(process).__name__} overrides run(), which the trace does not wrap")
            return start()
        target = getattr(process, "_target", None)
        if target is None:  # nothing runs in it
            return start()
        if self.folder is None:
            self.folder = tempfile.mkdtemp(prefix="gradcheck-l2c-children-")
        process._target = TracedTarget(target, self.folder, process.name, self.new_trace, self.active)  # type: ignore[attr-defined]
        try:
            return start()
        finally:
            process._target = target  # type: ignore[attr-defined]
            if process.pid is not None:
                self.started.append((site, process.pid, process.daemon, weakref.ref(process)))

    def finish(self) -> list[RankResult]:
        """The children's results, once each has reported or ended (at most :data:`CHILD_WAIT` seconds for
        those still running); a child without a result is recorded as untraced. The folder is removed."""
        if self.folder is None:
            return []
        try:
            deadline = time.monotonic() + CHILD_WAIT
            while True:
                results = read_results(self.folder)
                reported = {result.rank for result in results}
                running = [pid for _, pid, daemon, _ in self.started
                           if not daemon and pid not in reported and process_alive(pid)]
                if not running or time.monotonic() > deadline:
                    break
                time.sleep(_POLL)
            for site, pid, daemon, process in self.started:
                if pid in reported:
                    continue
                if daemon and process_alive(pid):
                    self.untraced(site, RUNNING)
                elif not _terminated_before_its_trace(process(), self.folder):
                    self.untraced(site, LOST)
            return results
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder, self.started = None, []


def _terminated_before_its_trace(process: BaseProcess | None, folder: str) -> bool:
    """Whether a child that wrote no result died of a SIGTERM that came before its trace caught that signal: before
    its target began (`TracedTarget` catches it from its first line), so nothing of the script ran under it. Not
    one whose target ran under a SIGTERM handler of the script's (it leaves a mark, `_ChildResult.own_handler`)."""
    if process is None or process_alive(process.pid):
        return False
    return process.exitcode == -signal.SIGTERM and not os.path.exists(_own_handler_mark(folder, process.pid))


def _own_handler_mark(folder: str, pid: int) -> str:
    return os.path.join(folder, f"own-sigterm-handler-{pid}")


class TracedTarget:
    """A child process's target, run in the child under a trace of its own whose result goes to ``folder``.
    It returns or raises exactly what the target does."""

    def __init__(self, target: Callable[..., Any], folder: str, name: str, new_trace: Callable[[], Any],
                 active: Callable[[], Any]) -> None:
        self.target, self.folder, self.name, self.new_trace, self.active = target, folder, name, new_trace, active

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        result = _ChildResult(self.active, self.folder, self.name)
        with result.written_on_sigterm():  # from the start: a Pool's terminate() may come while the trace is set up
            inherited = self.active()
            if inherited is not None and inherited.forked:  # fork copied the parent's trace: it reports nothing here
                inherited.__exit__(None, None, None)
            result.tracer = self.new_trace()
            try:
                with result.tracer:
                    try:
                        return self.target(*args, **kwargs)
                    finally:
                        result.ending = True  # a SIGTERM from here on ends the child once the result is written
            except SystemExit as stop:
                result.status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
                raise
            except BaseException:
                result.status = 1
                raise
            finally:
                result.write()
                if result.terminated:
                    _die_of_sigterm()


def _die_of_sigterm() -> None:
    """End this process as the SIGTERM it received would have."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


class _ChildResult:
    """What the child writes once: its trace's findings and how its target ended (nothing found, when SIGTERM came
    before its trace began: the target never ran)."""

    def __init__(self, active: Callable[[], Any], folder: str, name: str) -> None:
        self.active, self.folder, self.name = active, folder, name
        self.tracer: Any = None  # the child's trace, once made
        self.status = 0
        self.ending = False  # the target ended, or SIGTERM came: the trace is being judged and written
        self.terminated = False  # SIGTERM came meanwhile: the child dies of it once the result is written
        self._written = False

    def write(self) -> None:
        if self._written:
            return
        self._written = self.ending = True
        tracer = self.tracer
        if tracer is not None and self.active() is tracer:  # SIGTERM while it ran: end the trace here
            tracer.__exit__(None, None, None)
        findings, watched = (tracer.findings, tracer.watched) if tracer is not None else ([], [])
        result = RankResult(os.getpid(), self.status, bool(self.status), time.time(), "", [], findings, watched,
                            process=self.name)
        with contextlib.suppress(OSError):  # the parent's trace ended and removed the folder
            write_result(self.folder, result)

    def own_handler(self) -> None:
        """Leave the parent a mark that this child runs its target with a SIGTERM handler of the script's: dying of
        SIGTERM without a result, it may have run some of it (`_terminated_before_its_trace`)."""
        with contextlib.suppress(OSError):
            open(_own_handler_mark(self.folder, os.getpid()), "w", encoding="utf-8").close()

    @contextlib.contextmanager
    def written_on_sigterm(self) -> Iterator[None]:
        """Inside the block, SIGTERM (a Pool's ``terminate()``) writes the result, then ends the process as
        SIGTERM would have. A handler the script set is left alone."""
        from gradcheck_l2c.termination import ours

        previous = signal.getsignal(signal.SIGTERM)
        if threading.current_thread() is not threading.main_thread() \
                or not (previous == signal.SIG_DFL or ours(previous)):
            self.own_handler()
            yield
            return

        def handle(signum: int, frame: Any) -> None:
            if self.ending:  # being judged and written (perhaps by this handler, interrupted): die after that
                self.terminated = True
                return
            try:
                self.write()
            finally:  # even if writing failed: an exception raised here would reach the code the signal interrupted,
                _die_of_sigterm()  # and a Pool's worker loop catches those and waits for tasks that never come

        signal.signal(signal.SIGTERM, handle)
        try:
            yield
        finally:
            if signal.getsignal(signal.SIGTERM) is handle:
                signal.signal(signal.SIGTERM, previous)
