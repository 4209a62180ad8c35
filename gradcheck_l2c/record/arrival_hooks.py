"""How the trace learns that a watched leaf's gradient arrived: a post-accumulate-grad hook, put before the leaf's
others, or, for a fresh user leaf, a read of ``.grad`` when its first backward ends.

A loop that makes a fresh ``requires_grad=True`` leaf at every step would pay for a hook per leaf, and one more
call per backward, for a leaf that dies before the next one. Such a leaf, with no gradient and no hook of the
user's when that backward starts, has its gradient read once the backward ends (it arrived there exactly when
``.grad`` was set, as its hook would have seen); it gets its hook only if it outlives that backward, when the next
one starts. Any other leaf is hooked at once, and a waiting one when a backward starts with a gradient or a hook
of the user's already on it; a backward started inside another hooks the leaves the outer one reads, and one of a
thread the trace does not cover notes the first gradients it gives them.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import torch

from gradcheck_l2c.record.torch_internals import functions_off, has_post_accumulate_hooks, hook_first, stack_length


class _Waiting:
    """``Watched.hook`` of a leaf whose hook waits for the backward it outlives: nothing to remove yet."""

    def remove(self) -> None:
        """Nothing was registered."""


WAITING = _Waiting()


def arrival_hook(arrived: list[int], key: int) -> Callable[[torch.Tensor], None]:
    """A leaf's post-accumulate hook: notes ``key`` as arrived when ``leaf.grad`` is set as the hook fires (it
    fires also when a custom Function's backward returned None for the leaf, and a step fused into the backward,
    a user's hook that steps and clears ``.grad``, may run right after). One call per leaf per backward: the
    tool's own read, past any torch-function mode."""
    note = arrived.append

    def arrival(leaf: torch.Tensor) -> None:
        if not stack_length():
            if leaf.grad is not None:
                note(key)
            return
        with functions_off():
            if leaf.grad is not None:
                note(key)

    return arrival


def hook(registry: Any, watched: Any, tensor: torch.Tensor) -> None:
    """Give the watched leaf ``tensor`` its arrival hook, first among its post-accumulate hooks (before a user's
    that steps and clears ``.grad``)."""
    watched.hook = hook_first(tensor, arrival_hook(registry.arrived, watched.key))


def watch_arrivals(registry: Any, watched: Any, tensor: torch.Tensor, user_leaf: bool) -> None:
    """A leaf starts being watched: hook it, or, for a user's plain leaf without gradient or hooks yet, wait."""
    if user_leaf and not watched.is_parameter and tensor.grad is None and not has_post_accumulate_hooks(tensor):
        watched.hook = WAITING
        registry.unhooked.append(watched.key)
    else:
        hook(registry, watched, tensor)


def backward_starts(registry: Any) -> None:
    """A backward of the traced thread starts: the waiting leaves that outlived one are hooked; the others still
    alive are read after it if nothing could hide their gradient from that read (none yet, no hook of the user's),
    else hooked now. A backward started inside another (from a hook) first notes what the outer one gave so far to
    the leaves it reads, then hooks them."""
    checking, outlived, unhooked = registry.checking, registry.outlived, registry.unhooked
    if checking:
        for watched, tensor in _waiting(registry, checking):
            if tensor.grad is not None:
                registry.arrived.append(watched.key)
            hook(registry, watched, tensor)
        checking.clear()
    if outlived:
        for watched, tensor in _waiting(registry, outlived):
            hook(registry, watched, tensor)
        outlived.clear()
    if unhooked:
        for watched, tensor in _waiting(registry, unhooked):
            if tensor.grad is None and not has_post_accumulate_hooks(tensor):
                checking.append(watched.key)
            else:
                hook(registry, watched, tensor)
        unhooked.clear()


def backward_ended(registry: Any) -> None:
    """That backward returned (or raised): each leaf read for it got a gradient if ``.grad`` is set now; the next
    backward hooks those that live on (each leaf is read for one backward at most: a leaf kept alive without ever
    being used costs nothing per backward after that)."""
    checking = registry.checking
    if checking:
        for watched, tensor in _waiting(registry, checking):
            if tensor.grad is not None:
                registry.arrived.append(watched.key)
            registry.outlived.append(watched.key)
        checking.clear()


def _waiting(registry: Any, keys: list[int]) -> Iterator[tuple[Any, torch.Tensor]]:
    """The watched leaves of ``keys`` still alive and still waiting for their hook, with their tensors."""
    for key in keys:
        watched = registry.all[key]
        tensor = watched.ref()
        if tensor is not None and watched.hook is WAITING:
            yield watched, tensor


def run_elsewhere(registry: Any, run: Callable[[], Any]) -> Any:
    """Run a backward of a thread the trace does not cover: the waiting leaves it gives their first gradient are
    noted as arrived, as their hooks would have noted them there. The traced thread's lists are only read (it may be
    walking them now), and the leaves only weakly held."""
    bare = []
    for key in [*registry.checking, *registry.outlived, *registry.unhooked]:
        ref = registry.all[key].ref
        tensor = ref()
        if tensor is not None and tensor.grad is None:
            bare.append((key, ref))
        del tensor
    try:
        return run()
    finally:
        for key, ref in bare:
            tensor = ref()
            if tensor is not None and tensor.grad is not None:
                registry.arrived.append(key)
