"""``torch.set_grad_enabled(False)`` called as a plain call, not as a ``with`` block: gradients stay off for every line
after it, in any function, until a later call turns them on (a model loader that turns them off for inference and
never back on). The user line that made such a call is remembered while it holds; so is the user line that entered
each ``torch.inference_mode`` block open now, however the block was written (``with context:`` of a context chosen
earlier, a decorator), for a backward refused inside it."""
from __future__ import annotations

import os
import sys
from typing import Any, Callable

import torch
from torch.autograd.grad_mode import inference_mode, set_grad_enabled

from gradcheck_l2c.record.locations import Site, user_site
from gradcheck_l2c.record.state import TraceState

_SWITCHES = 64  # switches whose block may still end, at most
_TORCH = os.path.join(os.path.dirname(torch.__file__), "")  # torch's own code


def install(state: TraceState, replace: Callable[[type, str, Any], None]) -> None:
    """Wrap ``set_grad_enabled``'s ``__init__`` (which switches the mode at once) and ``__exit__`` (which puts the
    mode before it back, at the end of a ``with``); ``replace`` undoes both when the trace ends."""
    scope = state.scope
    switch, restore = set_grad_enabled.__dict__["__init__"], set_grad_enabled.__dict__["__exit__"]
    # id of a switch that changed the mode -> the plain switch that held before it, put back at the end of its block
    # (a `with` turning gradients on inside a module that turned them off for good); plain calls never end a block:
    # the oldest are let go past `_SWITCHES`. torch's own switches (an optimizer's step) come in pairs: left alone
    before: dict[int, Site | None] = {}

    def switched(self: set_grad_enabled, mode: bool) -> None:
        switch(self, mode)
        if scope.in_trace_thread() and not sys._getframe(1).f_code.co_filename.startswith(_TORCH):
            if mode == self.prev:  # no_grad blocks nested in a switched-off stretch leave it
                before.pop(id(self), None)
                return
            if len(before) >= _SWITCHES:
                del before[next(iter(before))]
            before[id(self)] = scope.grad_switched_off
            scope.grad_switched_off = None if mode else user_site(1)

    def restored(self: set_grad_enabled, *args: Any) -> None:
        restore(self, *args)
        if id(self) in before and scope.in_trace_thread():
            scope.grad_switched_off = before.pop(id(self))

    replace(set_grad_enabled, "__init__", switched)
    replace(set_grad_enabled, "__exit__", restored)
    _follow_inference_blocks(state, replace)


def _follow_inference_blocks(state: TraceState, replace: Callable[[type, str, Any], None]) -> None:
    """Wrap ``inference_mode``'s ``__enter__`` and ``__exit__``: each block open in the traced thread is kept, with
    its mode and the user line that entered it, until it exits (one left out of order, a generator's, is found by
    id)."""
    scope, blocks = state.scope, state.scope.inference_blocks
    enter, leave = inference_mode.__dict__["__enter__"], inference_mode.__dict__["__exit__"]

    def entered(self: inference_mode) -> Any:
        out = enter(self)
        if scope.in_trace_thread():
            blocks.append((id(self), bool(self.mode), user_site(1)))
        return out

    def left(self: inference_mode, *args: Any) -> Any:
        out = leave(self, *args)
        if blocks and scope.in_trace_thread():
            index = next((i for i in range(len(blocks) - 1, -1, -1) if blocks[i][0] == id(self)), None)
            if index is not None:
                del blocks[index]
        return out

    replace(inference_mode, "__enter__", entered)
    replace(inference_mode, "__exit__", left)
