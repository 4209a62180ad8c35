"""Ctrl-C held back while a trace installs or removes its hooks, then delivered as usual.

A ``KeyboardInterrupt`` landing half-way through installing the torch-function mode and the patches
would leave torch patched. While a trace runs (on the main thread, where Python delivers signals),
its SIGINT handler looks at the interrupted stack: inside the trace's ``__enter__`` or ``__exit__``
it only notes the signal, which ``release`` delivers once torch is back as it was; anywhere else it
hands the signal to the handler that was there before, so the user's Ctrl-C works unchanged.
"""
from __future__ import annotations

import signal
import threading
import types
from typing import Any


class InterruptGuard:
    """Holds SIGINT back while ``owner`` installs (``enter`` runs and `stop_holding` was not called yet)
    or removes itself (``exit`` runs), judged from the code objects on the interrupted stack."""

    def __init__(self, owner: object, enter: types.CodeType, exit: types.CodeType) -> None:
        self._owner = owner
        self._enter, self._exit = enter, exit
        self._previous: Any = None
        self._installed = False
        self.holding = False
        self.pending = False

    def install(self) -> None:
        """Put the guard's handler in place (main thread only: elsewhere no signal can arrive)."""
        self.holding = True
        if self._installed or threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGINT)
        if previous is None:  # installed from C: it cannot be put back, so leave it alone
            return
        self._previous = previous
        self._installed = True  # before the swap: an interrupted install is still undone
        signal.signal(signal.SIGINT, self._handle)

    def stop_holding(self) -> None:
        """The install is complete: deliver a Ctrl-C that arrived meanwhile, and hold no more."""
        self.holding = False
        self._deliver_pending()

    def release(self) -> None:
        """Put the previous handler back, then deliver a Ctrl-C that was held (idempotent)."""
        if self._installed:
            if signal.getsignal(signal.SIGINT) == self._handle:  # not if the traced code set its own
                signal.signal(signal.SIGINT, self._previous)
            self._installed = False
        self._deliver_pending()

    def _deliver_pending(self) -> None:
        if self.pending:
            self.pending = False
            _deliver(self._previous, None)

    def _handle(self, signum: int, frame: types.FrameType | None) -> None:
        code = self._protected_code(frame)
        if code is self._exit or (code is self._enter and self.holding):
            self.pending = True
            return
        _deliver(self._previous, frame)

    def _protected_code(self, frame: types.FrameType | None) -> types.CodeType | None:
        """The code of the owner's ``enter`` or ``exit`` running on the stack, if any."""
        while frame is not None:
            if frame.f_code in (self._enter, self._exit) and frame.f_locals.get("self") is self._owner:
                return frame.f_code
            frame = frame.f_back
        return None


def _deliver(handler: Any, frame: types.FrameType | None) -> None:
    """Do what ``handler`` (a previous SIGINT disposition) would have done with the signal."""
    if callable(handler):
        handler(signal.SIGINT, frame)
    elif handler == signal.SIG_DFL:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.raise_signal(signal.SIGINT)
