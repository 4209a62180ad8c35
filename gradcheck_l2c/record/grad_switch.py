"""``torch.set_grad_enabled(False)`` called as a plain call, not as a ``with`` block: gradients stay off for every line
after it, in any function, until a later call turns them on (a model loader that turns them off for inference and
never back on). The user line that made such a call is remembered while it holds."""
from __future__ import annotations

from typing import Any, Callable

from torch.autograd.grad_mode import set_grad_enabled

from gradcheck_l2c.record.locations import user_site
from gradcheck_l2c.record.state import TraceState


def install(state: TraceState, replace: Callable[[type, str, Any], None]) -> None:
    """Wrap ``set_grad_enabled``'s ``__init__`` (which switches the mode at once) and ``__exit__`` (which puts the
    mode before it back, at the end of a ``with``); ``replace`` undoes both when the trace ends."""
    scope = state.scope
    switch, restore = set_grad_enabled.__dict__["__init__"], set_grad_enabled.__dict__["__exit__"]

    def switched(self: set_grad_enabled, mode: bool) -> None:
        switch(self, mode)
        if scope.in_trace_thread() and mode != self.prev:  # off from on (torch's no_grad blocks nested in it leave it)
            scope.grad_switched_off = None if mode else user_site(1)

    def restored(self: set_grad_enabled, *args: Any) -> None:
        restore(self, *args)
        if scope.in_trace_thread() and self.prev:
            scope.grad_switched_off = None

    replace(set_grad_enabled, "__init__", switched)
    replace(set_grad_enabled, "__exit__", restored)
