"""`trace`: run code and explain, for every watched tensor that got no gradient, why and where.

One object is both a context manager and a decorator. On entry it installs a torch-function mode,
a parameter-registration hook and two small patches; on exit — however the code ends — it removes
them all and judges what it saw.

A trace entered while another runs in the same thread (a script's own ``with trace():`` under
``gradcheck-l2c trace`` or ``pytest --gradcheck``) joins it: it installs nothing, the running trace records,
and the joined one judges that record by its own ``watch`` (so it also covers what ran before it began).
"""
from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any, Callable, TypeVar

import torch

from gradcheck_l2c.children import ChildProcesses
from gradcheck_l2c.errors import ConcurrentTraceError, NestedTraceError, UsageError
from gradcheck_l2c.record.interrupts import InterruptGuard
from gradcheck_l2c.record.torch_internals import functions_off, mode_stack
from gradcheck_l2c.record.watch import WatchSpec
from gradcheck_l2c.present.merge import with_children
from gradcheck_l2c.records import CapturedGraph, Finding, WatchedTensor

F = TypeVar("F", bound=Callable[..., Any])
#: Hears the backward calls so far and a count of the tensors still missing, made when called: a status line that
#: draws a few times a second must not walk every tensor a cut kept a gradient from at every backward.
ProgressListener = Callable[[int, Callable[[], int]], None]
DISABLE_VARIABLE = "GRADCHECK_L2C_DISABLED"
_OFF, _ON = ("1", "true", "yes"), ("", "0", "false", "no")
_warned: set[str] = set()
_slot: "dict[str, tuple[Trace, int]]" = {}  # "active" -> the running trace and its thread's ident


def active_trace() -> "Trace | None":
    """The trace running now, if any."""
    return _slot.get("active", (None, 0))[0]


class Trace:
    """Watch tensors while code runs; afterwards ``findings`` says why any of them got no gradient.

    ``watch``: None (every parameter of the modules built or used during the trace and every leaf
    created with ``requires_grad=True``), or names/globs (``"alpha"``, ``"*.alpha"``,
    ``"model.fc1.*"``), tensors, modules, or a list of them. ``record_sites`` stores the forward
    line of every autograd node, for rendering (a little slower); ``nan`` and ``grad_stats``: see `trace`.
    """

    def __init__(self, watch: Any = None, *, record_sites: bool = False, nan: bool = False, grad_stats: bool = False) -> None:
        self._spec = WatchSpec.parse(watch)
        self._patterns = watch if _patterns_only(watch) else None  # what child processes watch
        self.record_sites, self.checks = record_sites, {"nan": nan, "grad_stats": grad_stats}  # checks: TraceState's
        self.on_progress: ProgressListener | None = None  # told after each backward
        self._state: Any = None
        self._mode: Any = None
        self._patches: Any = None
        self._verdict: Any = None
        self._disabled = False
        self._guard: InterruptGuard | None = None
        self._joined: Trace | None = None  # the trace this one joined
        self._children: Any = None  # the child processes it started (children.ChildProcesses)

    # ---- running ---------------------------------------------------------------------------

    def __enter__(self) -> "Trace":
        if active_trace() is self:  # this very trace is running: there is nothing to undo
            raise NestedTraceError("this trace is already running; a trace cannot be entered twice")
        try:
            return self._start()
        except BaseException:  # an error or Ctrl-C half-way: undo the part that was installed
            self._stop()
            raise

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._stop()
        finally:
            self._stop()  # a second pass finishes what an interrupt cut short in the first; else a no-op
        if self._state is not None and not self.forked:
            children = self._children.finish() if self._children is not None else []
            self._verdict = _with_children(self._judge(exc_info[1]), children)
            if isinstance(exc_info[1], RuntimeError):
                from gradcheck_l2c.judge.detectors.ddp_unused import note

                text = note(self._verdict.findings)
                if text:
                    exc_info[1].add_note(text)

    def __call__(self, function: F) -> F:
        """As a decorator: each call runs under this trace, then prints the report if it found something."""
        _refuse_pieces(function)

        @functools.wraps(function)
        def traced(*args: Any, **kwargs: Any) -> Any:
            with _printing_found(self), self:
                return function(*args, **kwargs)

        return traced  # type: ignore[return-value]

    def _start(self) -> "Trace":
        """Install everything; each step can be undone by `_stop` as soon as it has begun."""
        self._disabled = disabled_by_environment()
        if self._disabled:
            return self
        self._joined = _claim(self)
        if self._joined is not None:  # join the running trace (see above): share its record, install nothing
            self._state = self._joined._state
            self._state.watch_requested(self._spec)
            return self
        self._guard = InterruptGuard(self, Trace.__enter__.__code__, Trace.__exit__.__code__)
        self._guard.install()
        self._state, self._patches, self._mode = _recorder(self._spec, self.record_sites, self.checks)
        self._children = _follow_children(self, self._state.scope)
        self._verdict = None
        self._mode.on_progress = self._progress
        self._patches.install()
        self._mode.__enter__()
        self._guard.stop_holding()  # installed: a Ctrl-C held meanwhile is raised now, and undoes it all
        return self

    def _stop(self) -> None:
        """Undo whatever `_start` did, newest first; each step may run again (an interrupted pass is finished)."""
        if self._mode is not None and self._mode in mode_stack():
            self._mode.__exit__(None, None, None)
        if self._patches is not None:
            self._patches.restore()
        if self._state is not None and self._joined is None:
            self._state.end()
        _release(self)
        if self._guard is not None:
            self._guard.release()  # last: a Ctrl-C held meanwhile is raised from here

    def _progress(self) -> None:
        if self.on_progress is not None and not self.forked:
            self.on_progress(self._state.clock.backwards, self._state.backwards.still_missing)

    def _judge(self, raised: BaseException | None = None) -> Any:
        from gradcheck_l2c.judge.run import judge

        with functions_off(), _collector_paused():
            self._state.finish(raised)
            return judge(self._state.record(self._spec))

    def _current(self) -> Any:
        if self._verdict is not None:
            return self._verdict
        if self._state is None:
            return None
        return self._judge()

    # ---- results ---------------------------------------------------------------------------

    @property
    def findings(self) -> list[Finding]:
        """Every finding, the causes of each missing gradient first, in the order values flowed."""
        verdict = self._current()
        return list(verdict.findings) if verdict else []

    @property
    def watched(self) -> list[WatchedTensor]:
        verdict = self._current()
        return list(verdict.watched) if verdict else []

    @property
    def graphs(self) -> list[CapturedGraph]:
        """One graph per distinct shape of backward in which a watched tensor got no gradient."""
        verdict = self._current()
        return list(verdict.graphs) if verdict else []

    def release_graphs(self) -> None:
        """Forget the captured graphs (call it where freeing a huge graph is safe, see graph.py)."""
        if self._verdict is not None:
            self._verdict.graphs.clear()
        if self._state is not None:
            self._state.backwards.graphs.clear()

    grad_stats = property(lambda self: list(getattr(self._current(), "layers", [])),
                          doc="With ``grad_stats=True``: each weight's (two or more dimensions) gradient norms over the run (``LayerGradients``).")

    @property
    def unmatched_patterns(self) -> list[str]:
        verdict = self._current()
        return list(verdict.unmatched) if verdict else []

    @property
    def watched_names(self) -> list[str]:
        verdict = self._current()
        return list(verdict.names) if verdict else []

    @property
    def disabled(self) -> bool:
        """True when GRADCHECK_L2C_DISABLED turned this trace into a no-op."""
        return self._disabled

    @property
    def forked(self) -> bool:
        """True in a child process forked while the trace ran: only the parent judges and reports."""
        return self._state is not None and not self._state.scope.in_trace_process()

    @property
    def backward_count(self) -> int:
        return self._state.clock.backwards if self._state is not None else 0

    def findings_for(self, tensor: torch.Tensor) -> list[Finding]:
        """The findings about one tensor object."""
        if self._state is None:
            return []
        verdict = self._current()
        watched = self._state.registry.get(tensor)
        if watched is None:
            return []
        return [f for f in verdict.findings if f.tensor == watched.name]

    def expect(self, tensors: list[torch.Tensor], site: Any) -> None:
        """User code asserts at ``site`` that these tensors get gradients: they are judged as meant to
        learn, and ``site`` is where a missing gradient showed."""
        if self._state is None:
            return
        for tensor in tensors:
            self._state.registry.expect(tensor, site)

    def cuts_of(self, value: Any) -> list[Finding]:
        """Why ``value`` has no autograd history (a loss without ``grad_fn``, a number from ``.item()``):
        the cuts its values went through, as findings; empty when the trace saw none."""
        from gradcheck_l2c.judge.run import value_cuts

        if self._state is None:
            return []
        with functions_off():
            self._state.resolve_names()
            return value_cuts(self._state.record(), value)

    def report(self, *, color: bool = False, max_findings: int | None = None, verbose: bool = False) -> str:
        """The human report: a summary line, then each missing gradient's causes with file:line and fix."""
        from gradcheck_l2c.present.textreport import format_report

        return format_report(self.findings, self.watched, color=color, max_findings=max_findings,
                             verbose=verbose)


@contextlib.contextmanager
def _printing_found(tracer: Trace) -> Iterator[None]:
    """After the block, the decorator's report on stderr when a finding listed by default (not a note, not
    suppressed) exists: nobody may hold the ``Trace`` to read its findings; a call that raised reports too."""
    try:
        yield
    finally:
        if tracer._verdict is not None and any(f.severity != "info" and not f.suppressed for f in tracer.findings):
            print(tracer.report(color=False), file=sys.stderr)


def disabled_by_environment() -> bool:
    """Whether ``GRADCHECK_L2C_DISABLED`` turns tracing off: ``1``, ``true`` or ``yes`` (any case) do; ``0``,
    ``false``, ``no`` and empty do not; any other value is ignored with a one-line warning."""
    value = os.environ.get(DISABLE_VARIABLE, "")
    if value.strip().lower() in _OFF:
        return True
    if value.strip().lower() not in _ON and value not in _warned:
        _warned.add(value)  # once per process: a pytest run starts a trace per test
        print(f"gradcheck-l2c: warning: {DISABLE_VARIABLE}={value!r} is ignored; 1, true or yes turn tracing off",
              file=sys.stderr)
    return False


def trace(watch: Any = None, *, record_sites: bool = False, nan: bool = False, grad_stats: bool = False) -> Trace:
    """Start describing a trace: ``with trace(watch=["alpha"]) as t: train()`` or ``@trace()``;
    ``nan=True`` also says where the first NaN or Inf was born, ``grad_stats=True`` keeps gradient norms."""
    return Trace(watch, record_sites=record_sites, nan=nan, grad_stats=grad_stats)


def _recorder(spec: WatchSpec, record_sites: bool, checks: dict[str, bool]) -> tuple[Any, Any, Any]:
    """A new trace's record, already watching what was asked and what the caller's frame holds, and the
    patches and mode that will fill it (not installed yet)."""
    from gradcheck_l2c.judge.backward_error import word_failure
    from gradcheck_l2c.record.interceptor import Interceptor
    from gradcheck_l2c.record.locations import user_frame
    from gradcheck_l2c.record.patches import Patches
    from gradcheck_l2c.record.state import TraceState

    state = TraceState(spec, record_sites=record_sites, word_failure=word_failure, **checks)
    state.watch_requested()
    state.discover(user_frame(1))
    mode = Interceptor(state)
    return state, Patches(state, mode), mode


def _follow_children(tracer: Trace, scope: Any) -> Any:
    """The child processes ``tracer`` will start, each traced by a trace watching what it watches."""
    children = ChildProcesses(functools.partial(Trace, tracer._patterns, **tracer.checks), active_trace,
                              scope.untraced_child)
    scope.follow_child = children.start
    return children


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Judging makes objects per watched tensor (tens of thousands where a fresh leaf is watched at every step),
    and the garbage collector's full passes over the whole heap would double its time: it is paused meanwhile and
    switched back on after, if it was on (the script's garbage is collected as before, a moment later)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _with_children(verdict: Any, children: list[Any]) -> Any:
    """``verdict`` with the findings and watched tensors of the child processes' results added."""
    if children:
        verdict.findings, verdict.watched = with_children(verdict.findings, verdict.watched, children)
    return verdict


def _patterns_only(watch: Any) -> bool:
    """Whether ``watch`` is None or names and globs, which a child process can watch as well."""
    return watch is None or isinstance(watch, str) or \
        (isinstance(watch, (list, tuple)) and all(isinstance(item, str) for item in watch))


def _refuse_pieces(function: Callable[..., Any]) -> None:
    """``@trace()`` on a generator or coroutine function: its body runs in pieces between other code."""
    if inspect.isgeneratorfunction(function) or inspect.iscoroutinefunction(function) \
            or inspect.isasyncgenfunction(function):
        what = "a coroutine" if inspect.iscoroutinefunction(function) else "a generator"
        raise UsageError(
            f"@trace() cannot decorate {function.__qualname__}, {what} function: its body runs in "
            "pieces between other code, which a trace cannot follow without judging that code too; "
            "put `with gradcheck_l2c.trace():` around the code that runs it instead"
        )


def _claim(tracer: Trace) -> "Trace | None":
    """Make ``tracer`` the active trace, or return the trace already running in this thread (to join);
    one at a time, in one thread (torch-function modes are per thread, so a second thread's trace would see
    the first one's patches and none of its calls).

    ``dict.setdefault`` is one atomic step: of two threads entering at once, exactly one wins, and
    unlike a lock there is nothing an interrupt could leave held.
    """
    ident = threading.get_ident()
    winner, thread = _slot.setdefault("active", (tracer, ident))
    if winner is tracer:
        return None
    if thread != ident:
        raise ConcurrentTraceError(
            f"a gradcheck_l2c trace is already running in thread {_thread_name(thread)}; PyTorch's "
            "torch-function modes are per thread, so one trace runs at a time: trace the threads one "
            "after another, or the whole program from one thread"
        )
    return winner


def _release(tracer: Trace) -> None:
    """Stop ``tracer`` being the active trace (only its owner ever removes it)."""
    if active_trace() is tracer:
        del _slot["active"]


def _thread_name(ident: int | None) -> str:
    for thread in threading.enumerate():
        if thread.ident == ident:
            return thread.name
    return str(ident)

