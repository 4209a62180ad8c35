"""SIGTERM (a CI job's timeout, ``kill``) while the CLI runs a traced script: the report of what ran is still
written, then the process ends with 143 (128 + SIGTERM), as it would have ended untraced.

Only where SIGTERM would kill the process (its disposition is the default): a script or a parent that set
its own handler keeps it.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

#: The run was stopped by SIGTERM (128 + SIGTERM, as shells report it).
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM arrived while the traced script ran. It unwinds the script as Ctrl-C does (the trace is removed
    on the way out, whatever was running), and is not an ``Exception`` the script's handlers would catch."""


@contextlib.contextmanager
def terminable() -> Iterator[None]:
    """Inside the block, SIGTERM raises :class:`Terminated` once; a second one while the report is written
    waits for it. The previous disposition is back after the block (unless the script set its own)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    arrived: list[int] = []

    def handle(signum: int, frame: Any) -> None:
        arrived.append(signum)
        if len(arrived) == 1:
            raise Terminated()

    signal.signal(signal.SIGTERM, handle)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGTERM) is handle:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def ours(handler: Any) -> bool:
    """Whether ``handler`` is the one :func:`terminable` installed (a forked child inherits it)."""
    return getattr(handler, "__module__", None) == __name__
