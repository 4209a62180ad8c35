"""Item 4 of the hostile-conditions issue: Ctrl-C at any line of a trace's ``__enter__``/``__exit__``.

``sys.settrace`` counts the lines the tracer's own code runs while it installs and removes itself (the
judging after removal left out), and a second run interrupts it at line N, for every N. Two kinds of
interrupt: a real SIGINT (what Ctrl-C sends; the trace holds it back and delivers it once torch is
restored) and a ``KeyboardInterrupt`` raised straight from the trace function (an exception the code
must survive at every line it reaches). After each, torch is exactly as it was before.
"""
from __future__ import annotations

import gc
import signal
import sys
from pathlib import Path

import torch
from torch import nn

import gradcheck_l2c
from gradcheck_l2c.tracer import Trace, active_trace, trace

PACKAGE = str(Path(gradcheck_l2c.__file__).parent)
ENTRY = {Trace.__enter__.__code__: "__enter__", Trace.__exit__.__code__: "__exit__"}
SKIP = Trace._judge.__code__  # after the trace is removed: not part of installing or removing it


class LineInterrupter:
    """Counts the tracer's lines inside ``__enter__``/``__exit__``; at line ``at`` calls ``interrupt``
    and remembers where (function, line) it was."""

    def __init__(self, at: int, interrupt) -> None:
        self.at, self.interrupt = at, interrupt
        self.count = 0
        self.depth = 0  # frames of __enter__/__exit__ on the stack
        self.fired: tuple[str, int] | None = None

    def __call__(self, frame, event, arg):
        code = frame.f_code
        if event != "call":
            return None
        if code in ENTRY:
            self.depth += 1
        elif code is SKIP:
            self.depth -= 1000  # nothing under it counts
        elif self.depth <= 0 or not code.co_filename.startswith(PACKAGE):
            return None
        return self.local

    def local(self, frame, event, arg):
        if event == "return" and frame.f_code in ENTRY:
            self.depth -= 1
        elif event == "return" and frame.f_code is SKIP:
            self.depth += 1000
        elif event == "line" and self.depth > 0:
            self.count += 1
            if self.count == self.at:
                self.fired = (frame.f_code.co_name, frame.f_lineno)
                self.interrupt()
        return self.local


def training() -> None:
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2, 3)).sum().backward()
    optimizer.step()


def traced(interrupter: LineInterrupter) -> tuple[int, bool]:
    """Run a small traced training step under ``interrupter``; (KeyboardInterrupts seen, body ran)."""
    interrupts, ran = 0, False
    sys.settrace(interrupter)
    try:
        try:
            with trace():
                ran = True
                training()
        finally:
            sys.settrace(None)
    except KeyboardInterrupt:
        interrupts += 1
    return interrupts, ran


def every_line(interrupt):
    """Interrupt a traced run at its 1st, 2nd, ... line until a run has fewer lines; yield each
    interrupter and its outcome."""
    traced(LineInterrupter(0, interrupt))  # the first trace imports the tracer's modules
    gc.collect()  # a finalizer of earlier garbage (dynamo's) that ran mid-line would swallow the interrupt:
    gc.disable()  # none runs while the lines are interrupted
    try:
        yield from _each_line(interrupt)
    finally:
        gc.enable()


def _each_line(interrupt):
    """`every_line`'s loop: the interrupters at line 1, 2, ... and the outcome of each traced run."""
    at = 1
    while True:
        interrupter = LineInterrupter(at, interrupt)
        outcome = traced(interrupter)
        if interrupter.fired is None:
            assert outcome == (0, True)
            assert at > 100  # the install and removal were really counted
            return
        yield interrupter, outcome
        at += 1


def test_a_sigint_at_any_line_is_delivered_once_after_torch_is_restored(untouched, torch_state):
    for interrupter, (interrupts, ran) in every_line(lambda: signal.raise_signal(signal.SIGINT)):
        assert interrupts == 1, interrupter.fired
        assert torch_state() == untouched, interrupter.fired
        assert active_trace() is None


def _raise() -> None:
    raise KeyboardInterrupt


def test_a_keyboard_interrupt_raised_at_any_line_leaves_torch_restored(untouched, torch_state):
    """An exception (not a signal) can be raised at ``__exit__``'s first line, before any code of it can
    act; that one line relies on the SIGINT guard above and is checked to be the only one."""
    unprotected = []
    for interrupter, (interrupts, ran) in every_line(_raise):
        assert interrupts == 1
        if torch_state() != untouched:
            unprotected.append(interrupter.fired)
            active_trace().__exit__(None, None, None)  # the trace is whole: a second exit removes it
            assert torch_state() == untouched
    first_exit_line = Trace.__exit__.__code__.co_firstlineno + 1
    assert set(unprotected) == {("__exit__", first_exit_line)}
