"""A one-line progress display on a terminal while a long script runs under the tracer.

The script shares the terminal, so the line stays out of its way: the script's own writes go
through a thin stand-in for ``sys.stdout``/``sys.stderr`` that erases the line first, and the line
is only drawn again once the script has been quiet for a moment with its cursor at the start of
a line (never over a half-written line or a progress bar of its own).
"""
from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

_CLEAR_LINE = "\r\x1b[K"


class StatusLine:
    """Shows ``backward calls seen, tensors without a gradient so far`` on ``stream``, redrawn in place.

    Pass :meth:`update` as the tracer's ``on_progress``. Nothing is drawn during the first
    ``delay`` seconds (short scripts never see it), then at most once per ``interval`` seconds, and
    not within ``quiet`` seconds of the script's last output. :meth:`clear` erases the line.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        delay: float = 1.0,
        interval: float = 0.25,
        quiet: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.interval = interval
        self.quiet = quiet
        self.clock = clock
        self._next_draw = clock() + delay
        self._line_free = True  # the script's last output ended its line
        self._shown = False

    def update(self, backward_count: int, missing: Callable[[], int]) -> None:
        """Redraw the line if the time has come and the terminal line is free; ``missing`` counts the tensors without a
        gradient so far, asked only then (the count walks every tensor a cut kept a gradient from)."""
        now = self.clock()
        if now < self._next_draw or not self._line_free:
            return
        self._next_draw = now + self.interval
        n_missing = missing()
        calls = "call" if backward_count == 1 else "calls"
        tensors = "tensor" if n_missing == 1 else "tensors"
        text = f"gradcheck-l2c: {backward_count} backward {calls}, {n_missing} {tensors} without a gradient so far"
        self.stream.write(_CLEAR_LINE + text)
        self.stream.flush()
        self._shown = True

    def script_writes(self, text: str) -> None:
        """Called just before the script writes ``text`` to the terminal: erase the line, hold back."""
        if not text:
            return
        self.clear()
        self._next_draw = max(self._next_draw, self.clock() + self.quiet)
        self._line_free = text.endswith("\n")

    def clear(self) -> None:
        """Erase the line if it is on screen."""
        if self._shown:
            self.stream.write(_CLEAR_LINE)
            self.stream.flush()
            self._shown = False


class _ScriptStream:
    """Stands in for ``sys.stdout`` or ``sys.stderr``: tells the status line, then writes unchanged."""

    def __init__(self, stream: TextIO, status: StatusLine) -> None:
        self._stream = stream
        self._status = status

    def write(self, text: str) -> int:
        self._status.script_writes(text)
        return self._stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def sharing_terminal(status: StatusLine) -> Iterator[StatusLine]:
    """Route the script's ``sys.stdout``/``sys.stderr`` writes past ``status`` while the block runs.

    The streams are put back afterwards unless the script replaced them itself, and the line is
    erased.
    """
    saved = sys.stdout, sys.stderr
    standins = _ScriptStream(sys.stdout, status), _ScriptStream(sys.stderr, status)
    sys.stdout, sys.stderr = standins
    try:
        yield status
    finally:
        if sys.stdout is standins[0]:
            sys.stdout = saved[0]
        if sys.stderr is standins[1]:
            sys.stderr = saved[1]
        status.clear()
