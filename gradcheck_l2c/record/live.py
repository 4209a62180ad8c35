"""The watched tensors of one kind that are alive, listed again only when the registry grew (in a correct run:
once): what ``--nan`` and ``--grad-stats`` look at after every backward, without a walk over every tensor ever
watched."""
from __future__ import annotations

from typing import Any, Callable

import torch

from gradcheck_l2c.record.watch import Watched, WatchRegistry


class LiveWatched:
    """The watched tensors that ``keep`` accepts, with their weak references."""

    def __init__(self, registry: WatchRegistry, keep: Callable[[Watched], bool]) -> None:
        self.registry, self.keep = registry, keep
        self._entries: list[tuple[Watched, Any]] = []
        self._looked = 0  # how many of the registry's watched tensors were looked at

    def gradients(self) -> list[tuple[Watched, torch.Tensor, torch.Tensor]]:
        """Each kept tensor alive with a gradient: (its entry, the tensor, the gradient)."""
        watched = self.registry.all
        if len(watched) != self._looked:
            self._entries = [(entry, entry.ref) for entry in watched if entry.ref() is not None and self.keep(entry)]
            self._looked = len(watched)
        found = []
        for entry, ref in self._entries:
            tensor = ref()
            gradient = tensor.grad if tensor is not None else None
            if gradient is not None:
                found.append((entry, tensor, gradient))
        return found
