"""Loss terms that carry no gradient: a scalar added to a loss while its values came from watched tensors
only through a cut, although the loss's other terms do reach those tensors, so the term adds nothing to
their update (a penalty computed under no_grad, from ``.detach()``, or from a gradient taken without
``create_graph=True``)."""
from __future__ import annotations

from typing import Any

import torch

from gradcheck_l2c.record.args import flat
from gradcheck_l2c.record.locations import Site, user_site
from gradcheck_l2c.record.taint import Chain, TaintedFloat, TaintStore

Tensor = torch.Tensor
#: Ops that add terms into a loss; in-place forms included (``loss += term``).
ADDITIONS = frozenset((Tensor.add, Tensor.sub, Tensor.add_, Tensor.sub_, torch.add, torch.sub, torch.stack, torch.cat))
#: Autograd nodes through which a loss's terms are summed, scaled and reduced: a dead term marked on one of
#: them belongs to the loss; any other node (a layer, an error function) ends the walk.
_TERM_NODES = frozenset(("AddBackward0", "AddBackward1", "SubBackward0", "SubBackward1", "MulBackward0",
                         "MulBackward1", "DivBackward0", "DivBackward1", "NegBackward0", "SumBackward0",
                         "SumBackward1", "MeanBackward0", "MeanBackward1", "StackBackward0", "CatBackward0",
                         "ViewBackward0", "SqueezeBackward0", "SqueezeBackward1", "UnsqueezeBackward0",
                         "ToCopyBackward0", "CloneBackward0"))
_MARK = "gradcheck_dead_terms"
_WALK = 256


class TermLog:
    """Dead terms marked on the nodes that added them, and those a backward found (``found``: (where the term
    was added, the watched key, the chain of cuts its values went through) -> how often)."""

    def __init__(self, taints: TaintStore) -> None:
        self.taints = taints
        self.marked = 0
        self.found: dict[tuple[Site | None, int, Chain], int] = {}

    def added(self, func: Any, args: tuple, out: Any) -> None:
        """An op that adds terms ran in grad mode while some values carry taint: when a scalar term without
        gradient but with taint went into a result that has one, remember it on the result's node."""
        if func not in ADDITIONS or not isinstance(out, Tensor) or out.grad_fn is None:
            return
        stacked = func is torch.stack or func is torch.cat
        if not stacked and out.numel() != 1:
            return  # not a term of a scalar loss (a layer's `w - lr * g`, a residual)
        dead = None
        for arg in flat(args):
            if isinstance(arg, Tensor):
                if arg.requires_grad or (stacked and arg.numel() != 1):
                    continue
            elif type(arg) is not TaintedFloat:
                continue
            dead = self.taints.merge(dead, self.taints.get(arg))
        if dead is not None:
            out.grad_fn.metadata[_MARK] = (user_site(2), dead)
            self.marked += 1

    def check(self, roots: list[Tensor], reached: set[int]) -> None:
        """A backward ended: the dead terms its loss summed whose watched tensors it reached otherwise."""
        if not self.marked or not reached:
            return
        stack = [root.grad_fn for root in roots if isinstance(root, Tensor) and root.grad_fn is not None]
        seen: set[int] = set()
        while stack and len(seen) < _WALK:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            mark = node.metadata.get(_MARK)
            if mark is not None:
                site, taint = mark
                for key, chain in taint.chains.items():
                    if key in reached:
                        index = (site, key, chain)
                        self.found[index] = self.found.get(index, 0) + 1
            if type(node).__name__ in _TERM_NODES:
                stack.extend(child for child, _ in node.next_functions)
