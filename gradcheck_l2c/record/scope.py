"""Where and when the trace runs: its process and thread, what is running now, and how far the run got."""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from gradcheck_l2c.record.locations import Site


@dataclass
class Clock:
    """How far the run has got; facts are stamped with it (a leaf watched after the third backward)."""

    backwards: int = 0  # backward() and autograd.grad() calls that ended
    steps: int = 0  # optimizer.step() calls
    optimizers: int = 0  # optimizers built during the trace
    assigned: int = 0  # gradients user code assigned (``p.grad = ...``: per-sample clipping, torch.func)


@dataclass
class Scope:
    """The process and thread the trace covers, and what runs now in it."""

    record_sites: bool = False  # remember the forward line (and module) of every autograd node, for drawing
    pid: int = field(default_factory=os.getpid)
    thread: int = field(default_factory=threading.get_ident)
    quiet: bool = False  # torch's own optimizer code is running (zero_grad, a step without closure): nothing to see
    constructing: int = 0  # a legacy tensor constructor converts its items (their float() is no cut of the script's)
    # the custom autograd.Function classes whose forward runs now, innermost last (grad is off there by design)
    custom_forwards: list[str] = field(default_factory=list)
    captured: list[set[int]] = field(default_factory=list)  # per running custom forward: watched leaves it used
    module_path: list[str] = field(default_factory=list)  # with record_sites: the modules running now
    grad_switched_off: Site | None = None  # where a plain torch.set_grad_enabled(False) call left gradients off
    # the torch.inference_mode blocks open now, innermost last: (id of the block, its mode, the user line that entered)
    inference_blocks: list[tuple[int, bool, Site | None]] = field(default_factory=list)
    # backward passes run by other threads, which the trace does not cover: (thread, site) -> count
    untraced: dict[tuple[str, Site | None], int] = field(default_factory=dict)
    _untraced_lock: threading.Lock = field(default_factory=threading.Lock)
    # child processes started with multiprocessing that ran untraced: (site of the start, why) -> count
    children: dict[tuple[Site | None, str], int] = field(default_factory=dict)
    #: ``(process, site, start) -> start()``: starts a child under a trace of its own (set by the front door)
    follow_child: Callable[[Any, Site | None, Callable[[], Any]], Any] | None = None

    def in_trace_thread(self) -> bool:
        """Whether the calling thread is the one the trace covers."""
        return threading.get_ident() == self.thread

    def inference_entered(self) -> Site | None:
        """The user line that entered the innermost ``torch.inference_mode()`` block open now (None if none)."""
        return next((site for _, on, site in reversed(self.inference_blocks) if on), None)

    def in_trace_process(self) -> bool:
        """False in a child forked while the trace ran (it reports nothing)."""
        return self.pid == os.getpid()

    def untraced_child(self, site: Site | None, why: str) -> None:
        """A child process started at ``site`` ran untraced, for the reason ``why``."""
        self.children[site, why] = self.children.get((site, why), 0) + 1

    def untraced_backward(self, thread: str, site: Site | None) -> None:
        """A backward pass ran in another thread (called from that thread)."""
        with self._untraced_lock:
            self.untraced[thread, site] = self.untraced.get((thread, site), 0) + 1
