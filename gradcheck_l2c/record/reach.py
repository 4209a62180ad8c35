"""Which watched leaves a tensor's values come from, through its live autograd history."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.watch import WatchRegistry

_REACH = "gradcheck_reach"  # the answer, cached in the metadata of the node it was asked for
_LIVE = "gradcheck_live_reach"  # the same, counting only paths a nonzero gradient can take
BACKWARD_ROOT = "gradcheck_backward_root"  # marks the node of a loss a whole-graph backward ran from


class Reachability:
    """Answers "which watched leaves does this tensor reach?", once per autograd node."""

    def __init__(self, registry: WatchRegistry) -> None:
        self.registry = registry

    def __call__(self, tensor: torch.Tensor) -> frozenset[int]:
        """Watched keys whose leaves are reachable from ``tensor`` through live autograd history."""
        return self._walk(tensor, _REACH, None)

    def carrying(self, tensor: torch.Tensor) -> frozenset[int]:
        """Watched keys a nonzero gradient from ``tensor`` can reach: paths through nodes that send back
        only zeros (``round``, ``torch.normal``'s parameters) do not count."""
        return self._walk(tensor, _LIVE, graph.carries_gradient)

    def _walk(self, tensor: torch.Tensor, cache: str, expand) -> frozenset[int]:
        if not tensor.requires_grad:
            return frozenset()
        node = graph.grad_fn_of(tensor)
        if node is None:
            key = self.registry.key_of(tensor)
            if key is None and isinstance(tensor, nn.Parameter):
                key = self.adopt(tensor)
            return frozenset() if key is None else frozenset((key,))
        metadata = node.metadata
        cached = metadata.get(cache)
        if cached is not None:
            return cached
        key_of = self.registry.key_of
        keys = set()
        for child in graph.iter_nodes([node], graph.SAFE_WALK, expand):
            variable = getattr(child, "variable", None)
            if variable is not None:
                key = key_of(variable)
                if key is None and isinstance(variable, nn.Parameter):
                    key = self.adopt(variable)
                if key is not None:
                    keys.add(key)
        result = frozenset(keys)
        metadata[cache] = result
        return result

    def adopt(self, param: torch.Tensor) -> int | None:
        """A parameter of a module made before the trace (a pytest fixture, an earlier notebook cell)
        turns up on a cut path: watch it from now on, as if the module had been built here."""
        self.registry.watch_leaf(param, None)
        return self.registry.key_of(param)

    @staticmethod
    def remember(root: torch.Tensor, keys: frozenset[int]) -> None:
        """Every leaf a whole-graph backward of ``root`` could reach has fired its hook: later ``.item()``
        calls on this loss need no graph walk, and a later ``.detach()`` of it is a logged loss."""
        metadata = root.grad_fn.metadata
        metadata.setdefault(_REACH, keys)
        metadata[BACKWARD_ROOT] = True
