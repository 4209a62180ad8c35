"""How the trace learns that a watched leaf's gradient arrived: a post-accumulate-grad hook, put before the leaf's
others, or, for a fresh user leaf, a read of ``.grad`` when its first backward ends.

A loop that makes a fresh ``requires_grad=True`` leaf at every step would pay for a hook per leaf, and one more
call per backward, for a leaf that dies before the next one. Such a leaf, with no gradient and no hook of the
user's when that backward starts, has its gradient read once the backward ends (it arrived there exactly when
``.grad`` was set, as its hook would have seen); it gets its hook only if it outlives that backward, when the next
one starts. Any other leaf is hooked at once, and a waiting one when a backward starts with a gradient or a hook
of the user's already on it; a backward started inside another hooks the leaves the outer one reads, and one of a
thread the trace does not cover notes the first gradients it gives them.

A hooked leaf that a backward reached with nothing left to note but that (`arrivals.Arrivals`: a model's parameters,
from their second gradient on) would pay a hook call at every later backward, about 2 µs in place: 5% of the step of
an op-bound model of 80 parameters. It is polled instead (`Polling`): its hook goes, and its ``.grad`` and that
gradient's write counter are read when an outermost backward of the traced thread starts and when it ends, a change
telling that its gradient arrived, as the hook would have. A leaf that gets a post-accumulate hook of anyone else
(one that steps and clears ``.grad``) has its own back, first, at the next backward; once torch.distributed is
initialised (DDP writes the gradients of leaves a backward did not reach, into buckets they share), every polled
leaf is hooked again for good. One difference, by design: autograd calls a leaf's hook also when a custom Function's
backward returned None for it, so a hook counted an arrival when ``.grad`` still held an earlier gradient; the poll
sees nothing arrive there, which is what happened.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import torch
from torch.utils.hooks import RemovableHandle

from gradcheck_l2c.record.torch_internals import (functions_off, grad_marks, grads_changed, has_post_accumulate_hooks,
                                                  hook_first, hooked_or_gone, stack_length)


class _Unhooked:
    """``Watched.hook`` of a leaf without the tool's hook: nothing to remove."""

    def remove(self) -> None:
        """Nothing was registered."""


WAITING = _Unhooked()  # a fresh user leaf whose hook waits for the backward it outlives
POLLED = _Unhooked()  # a leaf whose gradients are read around each backward instead (`Polling`)


class Polling:
    """The leaves whose arrivals are read from ``.grad`` around each outermost backward, and those to join them."""

    on = True  # off for good once torch.distributed is initialised (a class default: tests compare with hooks)

    def __init__(self) -> None:
        self.joining: list[int] = []  # keys found with nothing left to note but their arrivals: polled from the next
        self.polled: list[Any] = []  # their `Watched`
        self.marks: tuple[list[Any], list[torch.Tensor], list[tuple[Any, int]]] | None = None  # at the backward start
        self.running = 0  # backwards of the traced thread running now (one inside another's hook: 2)


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


def hooked(watched: Any) -> bool:
    """Whether the tool's post-accumulate hook is on the watched leaf (not waiting, not polled, not gone)."""
    return isinstance(watched.hook, RemovableHandle)


def watch_arrivals(registry: Any, watched: Any, tensor: torch.Tensor, user_leaf: bool) -> None:
    """A leaf starts being watched: hook it, or, for a user's plain leaf without gradient or hooks yet, wait."""
    if user_leaf and not watched.is_parameter and tensor.grad is None and not has_post_accumulate_hooks(tensor):
        watched.hook = WAITING
        registry.unhooked.append(watched)
    else:
        hook(registry, watched, tensor)


def backward_starts(registry: Any) -> None:
    """A backward of the traced thread starts: the waiting leaves that outlived one are hooked; the others still
    alive are read after it if nothing could hide their gradient from that read (none yet, no hook of the user's),
    else hooked now. A backward started inside another (from a hook) first notes what the outer one gave so far to
    the leaves it reads, then hooks them. An outermost one marks the polled leaves' gradients."""
    polling = registry.polling
    if not polling.running and polling.on and (polling.polled or polling.joining):
        _mark_polled(registry, polling)
    checking, outlived, unhooked = registry.checking, registry.outlived, registry.unhooked
    # each list is walked in place (a leaf or two at each backward): a leaf still waiting is alive with ``WAITING``
    if checking:
        for watched in checking:
            tensor = watched.ref()
            if tensor is not None and watched.hook is WAITING:
                if tensor.grad is not None:
                    registry.arrived.append(watched.key)
                hook(registry, watched, tensor)
        checking.clear()
    if outlived:
        for watched in outlived:
            tensor = watched.ref()
            if tensor is not None and watched.hook is WAITING:
                hook(registry, watched, tensor)
        outlived.clear()
    if unhooked:
        for watched in unhooked:
            tensor = watched.ref()
            if tensor is not None and watched.hook is WAITING:
                if tensor.grad is None and not has_post_accumulate_hooks(tensor):
                    checking.append(watched)
                else:
                    hook(registry, watched, tensor)
        unhooked.clear()
    polling.running += 1  # last: `backward_ended` runs only for a backward that got past this


def backward_ended(registry: Any) -> None:
    """That backward returned (or raised): each leaf read for it got a gradient if ``.grad`` is set now; the next
    backward hooks those that live on (each leaf is read for one backward at most: a leaf kept alive without ever
    being used costs nothing per backward after that). The outermost one reads the polled leaves' gradients."""
    polling = registry.polling
    polling.running -= 1
    if polling.marks is not None and not polling.running:
        polled, tensors, marks = polling.marks
        polling.marks = None
        registry.arrived.extend(polled[index].key for index in grads_changed(tensors, marks))
    checking = registry.checking
    if checking:
        for watched in checking:
            tensor = watched.ref()
            if tensor is not None and watched.hook is WAITING:
                if tensor.grad is not None:
                    registry.arrived.append(watched.key)
                registry.outlived.append(watched)
        checking.clear()


def _mark_polled(registry: Any, polling: Polling) -> None:
    """An outermost backward starts: the leaves found steady since the last one join the polled ones (their hooks
    go), the polled ones given another's post-accumulate hook get theirs back, and every polled leaf's gradient is
    marked (`grad_marks`), unless torch.distributed runs, which ends polling."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        polling.on = False
        for watched, tensor in _live(polling.polled):
            hook(registry, watched, tensor)
        polling.polled, polling.joining = [], []
        return
    if polling.joining:
        for key in polling.joining:
            watched = registry.all[key]
            tensor = watched.ref()
            if tensor is not None and hooked(watched):
                watched.hook.remove()
                if has_post_accumulate_hooks(tensor):  # another's: the tool's must stay first
                    hook(registry, watched, tensor)
                else:
                    watched.hook = POLLED
                    polling.polled.append(watched)
        polling.joining.clear()
    polled = polling.polled
    tensors = [watched.ref() for watched in polled]
    dropped = hooked_or_gone(tensors)
    if dropped:
        for index in dropped:
            if tensors[index] is not None:
                hook(registry, polled[index], tensors[index])
        drop = set(dropped)
        polled[:] = [watched for index, watched in enumerate(polled) if index not in drop]
        tensors = [tensor for index, tensor in enumerate(tensors) if index not in drop]
    if polled:
        polling.marks = list(polled), tensors, grad_marks(tensors)


def _live(watched_leaves: list[Any]) -> Iterator[tuple[Any, torch.Tensor]]:
    """The watched leaves still alive, with their tensors."""
    for watched in watched_leaves:
        tensor = watched.ref()
        if tensor is not None:
            yield watched, tensor


def run_elsewhere(registry: Any, run: Callable[[], Any]) -> Any:
    """Run a backward of a thread the trace does not cover: the waiting leaves it gives their first gradient, and the
    polled leaves whose gradient it sets or writes into, are noted as arrived, as their hooks would have noted them
    there. The traced thread's lists are only read (it may be walking them now), and the waiting leaves only weakly
    held."""
    bare = []
    for watched in [*registry.checking, *registry.outlived, *registry.unhooked]:
        ref = watched.ref
        tensor = ref()
        if tensor is not None and tensor.grad is None:
            bare.append((watched.key, ref))
        del tensor
    polled = list(_live(list(registry.polling.polled)))
    tensors = [tensor for _, tensor in polled]
    marks = grad_marks(tensors)
    try:
        return run()
    finally:
        for key, ref in bare:
            tensor = ref()
            if tensor is not None and tensor.grad is not None:
                registry.arrived.append(key)
        registry.arrived.extend(polled[index][0].key for index in grads_changed(tensors, marks))
