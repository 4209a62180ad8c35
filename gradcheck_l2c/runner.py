"""Run a Python file, a directory with ``__main__.py``, or a module as ``__main__``, as ``python`` would.

The tracer wraps :meth:`ScriptRunner.run`. The script sees the interpreter state plain ``python``
gives it (``sys.argv``, ``sys.path[0]``, a fresh ``__main__`` module with ``__file__``,
``__spec__`` and ``__loader__``), and its code is compiled under its real filename so that
tracebacks and the tracer's ``file:line`` point into it. Afterwards ``sys`` is put back as it was.
"""
from __future__ import annotations

import builtins
import contextlib
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.present.status import StatusLine, sharing_terminal
from gradcheck_l2c.records import fails
from gradcheck_l2c.termination import EXIT_TERMINATED, Terminated, terminable

if TYPE_CHECKING:
    from gradcheck_l2c.tracer import Trace

#: No finding at the ``--fail-on`` level, and the script ended normally.
EXIT_OK = 0
#: Findings at the ``--fail-on`` level, or the script raised an exception (its own exit code wins otherwise).
EXIT_FINDINGS = 1
#: The tool was called wrongly: bad option, no such script or module.
EXIT_USAGE = 2
#: The run was stopped with Ctrl-C (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130


_TOOL_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class ScriptRunner:
    """Runs one script in two steps: :meth:`prepare` finds and compiles it, :meth:`run` executes it.

    ``target`` is a path (file or directory) or, with ``as_module=True``, a dotted module name;
    ``args`` become ``sys.argv[1:]``. Problems the user must fix before anything can run (no such
    file, no module, no ``__main__.py``) raise :class:`UsageError`; a syntax error in the script
    raises ``SyntaxError`` exactly as Python reports it.
    """

    def __init__(self, target: str, args: Sequence[str] = (), *, as_module: bool = False) -> None:
        self.target = target
        self.args = list(args)
        self.as_module = as_module
        self.filename: str | None = None  # absolute path of the code that runs
        self.argv0 = target
        self._code: types.CodeType | None = None
        self._module_attrs: dict[str, Any] = {}

    def path0(self) -> str | None:
        """The folder Python puts first on ``sys.path`` for this target (``None`` under ``-P``)."""
        if sys.flags.safe_path:
            return None
        if self.as_module:
            return os.getcwd()
        if os.path.isdir(self.target):
            return os.path.abspath(self.target)
        return os.path.dirname(os.path.abspath(self.target))

    def prepare(self) -> None:
        """Locate the code to run and compile it; nothing of the script runs yet."""
        with _path0(self.path0()):
            if self.as_module:
                self._find_module()
            else:
                self._find_file()
        from gradcheck_l2c.record.locations import claim_user_code  # loads torch: --help runs without it
        from gradcheck_l2c.record.stacks import runs_scripts

        claim_user_code(os.path.dirname(self.filename))
        runs_scripts(ScriptRunner.run.__code__)
        self._code = _compile_file(self.filename)

    def run(self) -> None:
        """Execute the prepared script as ``__main__``; ``sys`` and the working folder are restored
        whatever happens.

        ``SystemExit`` and every exception the script raises pass through unchanged; show them
        with :func:`show_exception` to hide this tool's frames.
        """
        if self._code is None:
            self.prepare()
        main = types.ModuleType("__main__")
        main.__dict__.update(self._module_attrs)
        main.__dict__["__builtins__"] = builtins
        saved_argv = sys.argv
        saved_main = sys.modules.get("__main__")
        saved_cwd = os.getcwd()
        sys.argv = [self.argv0, *self.args]
        sys.modules["__main__"] = main
        try:
            with _path0(self.path0()):
                exec(self._code, main.__dict__)
        finally:
            os.chdir(saved_cwd)
            sys.argv = saved_argv
            if saved_main is None:
                sys.modules.pop("__main__", None)
            else:
                sys.modules["__main__"] = saved_main

    def _find_file(self) -> None:
        path = os.path.abspath(self.target)
        if os.path.isdir(path):
            main_file = os.path.join(path, "__main__.py")
            if not os.path.isfile(main_file):
                raise UsageError(f"can't find '__main__' module in {path!r}")
            loader = importlib.machinery.SourceFileLoader("__main__", main_file)
            spec = importlib.machinery.ModuleSpec("__main__", loader, origin=main_file)
            spec.has_location = True
            self.filename = main_file
            self._module_attrs = {
                "__file__": main_file,
                "__loader__": loader,
                "__spec__": spec,
                "__package__": "",
                "__cached__": spec.cached,
            }
            return
        if not os.path.isfile(path):
            raise UsageError(f"can't open file {path!r}: no such file")
        self.filename = path
        self._module_attrs = {
            "__file__": path,
            "__loader__": importlib.machinery.SourceFileLoader("__main__", path),
            "__spec__": None,
            "__package__": None,
            "__cached__": None,
        }

    def _find_module(self) -> None:
        name = self.target
        spec = _find_spec(name)
        if spec.submodule_search_locations is not None:
            spec = _find_spec(f"{name}.__main__", package=name)
        if not spec.has_location or spec.origin is None or not spec.origin.endswith(".py"):
            raise UsageError(f"no Python source to run for module {spec.name!r}")
        self.filename = os.path.abspath(spec.origin)
        self.argv0 = self.filename
        self._module_attrs = {
            "__file__": self.filename,
            "__loader__": spec.loader,
            "__spec__": spec,
            "__package__": spec.parent,
            "__cached__": spec.cached,
        }


@dataclass
class Outcome:
    """How a script run ended: its exit status, or the exception that stopped it."""

    exit_status: int = 0  # what ``sys.exit`` asked for; 0 when the script ran to its end
    exception: BaseException | None = None  # an exception other than SystemExit, to show the user


def run_script(runner: ScriptRunner, around: contextlib.AbstractContextManager[Any] | None = None) -> Outcome:
    """Run the script inside ``around`` (the tracer) and turn how it ended into an :class:`Outcome`.

    ``sys.exit("message")`` prints the message to stderr and counts as status 1, as in Python.
    """
    try:
        with terminable(), around if around is not None else contextlib.nullcontext():
            runner.run()
    except SystemExit as exc:
        return Outcome(exit_status=_exit_status(exc.code))
    except (Exception, KeyboardInterrupt, Terminated) as exc:
        return Outcome(exception=exc)
    return Outcome()


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _find_spec(name: str, package: str | None = None) -> importlib.machinery.ModuleSpec:
    """``importlib.util.find_spec`` with Python's own ``-m`` error wording."""
    try:
        spec = importlib.util.find_spec(name)
    except ImportError as exc:
        raise UsageError(
            f"error while finding module specification for {name!r} "
            f"({type(exc).__name__}: {exc})"
        ) from None
    if spec is None:
        if package is not None:
            raise UsageError(
                f"no module named {name}; {package!r} is a package and cannot be directly executed"
            )
        raise UsageError(f"no module named {name}")
    return spec


def _compile_file(filename: str) -> types.CodeType:
    """Compile a source file under its real name, honouring its encoding declaration."""
    with open(filename, "rb") as source:
        data = source.read()
    try:
        return compile(data, filename, "exec", dont_inherit=True)
    except ValueError as exc:  # null bytes: not a Python source file
        raise UsageError(f"can't run {filename!r}: {exc}") from None


@contextlib.contextmanager
def _path0(folder: str | None) -> Iterator[None]:
    """``sys.path[0]`` is ``folder`` inside the block; ``sys.path`` is as before after it."""
    saved = list(sys.path)
    if folder is not None:
        if sys.path:
            sys.path[0] = folder
        else:
            sys.path.append(folder)
    try:
        yield
    finally:
        sys.path[:] = saved


def is_tool_frame(frame: types.FrameType) -> bool:
    """True for frames running this package's own code (CLI, runner, tracer patches)."""
    return frame.f_code.co_filename.startswith(_TOOL_DIR)


def strip_tool_frames(tb: types.TracebackType | None) -> types.TracebackType | None:
    """A copy of the traceback chain ``tb`` as it would be without this tool.

    Drops the tool's own frames, and the detour torch takes through the tracer's function mode: a
    torch function that calls ``handle_torch_function`` runs again from the mode, so its frame
    appears twice with ``handle_torch_function`` between; only the second one is kept.
    """
    entries = []
    while tb is not None:
        if not is_tool_frame(tb.tb_frame):
            entries.append(tb)
        tb = tb.tb_next
    dispatch = _torch_dispatch_code()
    kept = []
    for index, entry in enumerate(entries):
        if entry.tb_frame.f_code is dispatch:
            if kept and index + 1 < len(entries) and entries[index + 1].tb_frame.f_code is kept[-1].tb_frame.f_code:
                kept.pop()
            continue
        kept.append(entry)
    result = None
    for entry in reversed(kept):
        result = types.TracebackType(result, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return result


def _torch_dispatch_code() -> types.CodeType | None:
    """The code of ``torch.overrides.handle_torch_function``, if torch is loaded (never imports it)."""
    function = getattr(sys.modules.get("torch.overrides"), "handle_torch_function", None)
    return getattr(function, "__code__", None)


def show_exception(exc: BaseException, *, keep_tool_frames: bool = False) -> None:
    """Print ``exc`` through ``sys.excepthook`` as Python would at top level, minus the tool's frames.

    Chained exceptions (``__cause__``, ``__context__``) are trimmed too.
    """
    if not keep_tool_frames:
        seen: set[int] = set()
        link: BaseException | None = exc
        while link is not None and id(link) not in seen:
            seen.add(id(link))
            link.__traceback__ = strip_tool_frames(link.__traceback__)
            link = link.__cause__ or link.__context__
    sys.excepthook(type(exc), exc, exc.__traceback__)


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (a replaced stream may not even have ``isatty``)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (https://no-color.org)."""
    return is_terminal(stream) and not os.environ.get("NO_COLOR")


def traced_run(
    runner: ScriptRunner,
    *,
    watch: list[str] | None,
    record_sites: bool,
    stream: TextIO,
    nan: bool = False,
    grad_stats: bool = False,
    show_status: bool,
    keep_tool_frames: bool = False,
) -> tuple[Trace, Outcome]:
    """Run a prepared script under a new trace, with the status line on ``stream`` if asked.

    An exception that stopped the script is printed as Python would, minus the tool's frames.
    Returns the finished trace and how the script ended.
    """
    from gradcheck_l2c.tracer import trace

    tracer = trace(watch=watch, record_sites=record_sites, nan=nan, grad_stats=grad_stats)
    if show_status:
        status = StatusLine(stream)
        tracer.on_progress = status.update
        with sharing_terminal(status):
            outcome = run_script(runner, tracer)
        tracer.on_progress = None
    else:
        outcome = run_script(runner, tracer)
    _flush(sys.stdout)
    _reopen_stderr()
    if outcome.exception is not None and not isinstance(outcome.exception, Terminated):  # SIGTERM shows none
        show_exception(outcome.exception, keep_tool_frames=keep_tool_frames)
    return tracer, outcome


def exit_code(outcome: Outcome, findings: Sequence[Any], fail_on: str) -> int:
    """The exit status: Ctrl-C, an exception, or the script's own non-zero exit first; then findings."""
    if isinstance(outcome.exception, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(outcome.exception, Terminated):
        return EXIT_TERMINATED
    if outcome.exception is not None:
        return EXIT_FINDINGS
    if outcome.exit_status:
        return outcome.exit_status
    return EXIT_FINDINGS if fails(findings, fail_on) else EXIT_OK


def _reopen_stderr() -> None:
    """A script that closed ``sys.stderr`` (Python's stream; file descriptor 2 stays open) still gets the
    report: ``sys.stderr`` becomes a new stream on descriptor 2, or on nothing if that was closed too."""
    if not getattr(sys.stderr, "closed", False):
        return
    try:
        sys.stderr = os.fdopen(os.dup(2), "w", buffering=1, errors="backslashreplace")
    except OSError:
        sys.stderr = open(os.devnull, "w")


def _flush(stream: TextIO) -> None:
    """Flush the script's stdout so its output comes before the report; it may have closed it."""
    try:
        stream.flush()
    except (OSError, ValueError):
        pass
