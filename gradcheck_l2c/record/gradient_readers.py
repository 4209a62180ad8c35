"""Gradients the script takes from a backward itself rather than from the parameters' ``.grad``: through a hook that
looks at an activation's gradient and changes nothing (Grad-CAM's hook on a layer, a tensor hook that keeps it), or
from a non-leaf kept with ``retain_grad()``. A backward that feeds one was run for those (an attribution pass): the
gradients it leaves on parameters are a by-product, which no step has to read."""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable

from gradcheck_l2c.record.locations import first_past_torch


class GradientReaders:
    """Whether the backward now ending fed the script's own reading of gradients."""

    def __init__(self) -> None:
        self.fed = False  # a looking hook ran, or a non-leaf was retained, since the last backward ended

    def looking(self, hook: Callable[..., Any]) -> Callable[..., Any]:
        """``hook`` as user code registers it, telling this when it ran and returned nothing (it only looked): the
        same hook to torch, which calls it with the same arguments and gets its result unchanged."""
        readers = self

        @functools.wraps(hook)
        def looked(*args: Any, **kwargs: Any) -> Any:
            result = hook(*args, **kwargs)
            if result is None:
                readers.fed = True
            return result

        return looked

    def retained(self) -> None:
        """User code called ``retain_grad()`` on a non-leaf: the next backward fills a gradient the script reads."""
        self.fed = True

    def take(self) -> bool:
        """Whether the backward that just ended fed a reading of the script's; the next one starts afresh."""
        fed, self.fed = self.fed, False
        return fed


def module_hook_registration(readers: GradientReaders, original: Callable[..., Any]) -> Callable[..., Any]:
    """``nn.Module.register_full_backward_hook`` (or the legacy or pre- one) whose hooks, registered by user code,
    tell ``readers`` when they only looked."""

    @functools.wraps(original)
    def register(module: Any, hook: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if _registered_outside_torch():
            hook = readers.looking(hook)
        return original(module, hook, *args, **kwargs)

    return register


def on_register_hook(mode: Any, func, args, kwargs):
    """``t.register_hook(hook)`` on a non-leaf by user code or a library (Grad-CAM's): the hook tells when it looked."""
    tensor, hook = args[0], args[1] if len(args) > 1 else kwargs["hook"]
    if tensor.grad_fn is not None and _registered_outside_torch():
        return func(tensor, mode.state.optimizers.readers.looking(hook))
    return func(*args, **kwargs)


def on_retain_grad(mode: Any, func, args, kwargs):
    """``t.retain_grad()`` on a non-leaf outside torch: the next backward fills a gradient the script reads."""
    if args[0].grad_fn is not None and _registered_outside_torch():
        mode.state.optimizers.readers.retained()
    return func(*args, **kwargs)


def _registered_outside_torch() -> bool:
    """Whether code other than this tool and torch (the user's, a library's: Grad-CAM's) registers it: the hooks torch
    sets for itself (``register_multi_grad_hook``'s) read nothing for the script."""
    return first_past_torch(sys._getframe(2)) is not None
