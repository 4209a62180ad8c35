"""Loss terms that carry no gradient: a scalar added to a loss, or a per-sample term added before the loss is
reduced, while its values came from watched tensors only through a cut, although the loss's other terms do reach
those tensors, so the term adds nothing to their update (a penalty computed under no_grad, from ``.detach()``, or
from a gradient taken without ``create_graph=True``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from gradcheck_l2c.record.args import flat
from gradcheck_l2c.record.dropped_terms import DroppedTerms
from gradcheck_l2c.record.locations import Site, user_site
from gradcheck_l2c.record.numpy_exits import NumpyExits
from gradcheck_l2c.record.origins import MADE
from gradcheck_l2c.record.reach import Reachability
from gradcheck_l2c.record.taint import Chain, Taint, TaintedFloat, TaintStore
from gradcheck_l2c.record.torch_internals import functions_off

Tensor = torch.Tensor
#: Ops that add terms into a loss; in-place forms included (``loss += term``).
ADDITIONS = frozenset((Tensor.add, Tensor.sub, Tensor.add_, Tensor.sub_, torch.add, torch.sub, torch.stack, torch.cat))
#: Of those, the ones that add a per-sample term before the loss is reduced (``(adv + beta * kl).mean()``). A
#: difference is left out: the same network's detached TD target is subtracted per sample on purpose.
ELEMENTWISE_SUMS = frozenset((Tensor.add, Tensor.add_, torch.add))
#: Autograd nodes through which a loss's terms are summed, scaled and reduced: a dead term marked on one of
#: them belongs to the loss; any other node (a layer, an error function) ends the walk.
_TERM_NODES = frozenset(("AddBackward0", "AddBackward1", "SubBackward0", "SubBackward1", "MulBackward0",
                         "MulBackward1", "DivBackward0", "DivBackward1", "NegBackward0", "SumBackward0",
                         "SumBackward1", "MeanBackward0", "MeanBackward1", "StackBackward0", "CatBackward0",
                         "ViewBackward0", "SqueezeBackward0", "SqueezeBackward1", "UnsqueezeBackward0",
                         "ToCopyBackward0", "CloneBackward0"))
_ZEROED = frozenset(("step", "sample"))  # non_differentiable outputs whose values mean to carry a gradient
_MARK = "gradcheck_dead_terms"
_ZERO_MARK = "gradcheck_zero_dead_terms"  # dead terms that were exactly zero when added: judged by the line's later ones
_ASIDE = "gradcheck_terms_aside"  # terms with a gradient, cut from some watched tensors they were computed from
_LOSS_SITE = "gradcheck_loss_site"
_WALK = 256


@dataclass(eq=False)
class TakenGradient:
    """Gradients one user line took with ``create_graph=True`` (to put a penalty on them, as WGAN-GP and R1
    do), and whether any later backward ran through them; ``loss_site``: the line that made the loss of the
    first backward that ran while none had been used, where the term belongs."""

    site: Site | None
    keys: frozenset[int]
    taken: int = 0
    used: bool = False
    loss_site: Site | None = None

    def fired(self, *_: Any) -> None:
        self.used = True


def _zero(value: Any) -> bool:
    """A term that is exactly zero: weighted by 0, it changes no update whatever its gradient."""
    if type(value) is TaintedFloat:
        return value == 0
    if isinstance(value, Tensor) and value.numel() == 1:
        with functions_off():
            return not bool(value.any())
    return False


class TermLog:
    """Dead terms marked on the nodes that added them, and those a backward found (``found``: (where the term
    was added, the watched key, the chain of cuts its values went through) -> how often)."""

    def __init__(self, taints: TaintStore, reach: Reachability, numpy_exits: NumpyExits) -> None:
        self.taints = taints
        self.reach = reach
        self.numpy_exits = numpy_exits  # a NumPy number added to a loss: tied to what left for NumPy
        self.dropped = DroppedTerms(reach.registry)  # terms never added to a loss at all
        self.marked = 0
        self.found: dict[tuple[Site | None, int, Chain], int] = {}
        #: dead terms a backward summed while they were exactly zero (a proximal term at the start of a round, its
        #: weights equal to the anchor's): found once the same line adds a term that is not (`_nonzero_at`)
        self.found_zero: dict[tuple[Site | None, int, Chain], int] = {}
        self.taken: dict[Site | None, TakenGradient] = {}
        self.unplaced: list[TakenGradient] = []
        #: terms the last backward summed that reach some tensors it reached otherwise only through a cut:
        #: (where added, the cut key, the cuts) -> the keys the term does carry, judged by the steps that follow
        self.pending: dict[tuple[Site | None, int, Chain], frozenset[int]] = {}
        #: gradient steps ``w - lr * g`` on watched leaves with a gradient taken without a graph: (key, cut) -> line
        self.first_order: dict[tuple[int, Chain], Site | None] = {}
        self.first_order_found: dict[tuple[Site | None, int, Chain], int] = {}  # and the backwards that reached them

    def took_gradients(self, grads: Any, roots: list[Tensor]) -> None:
        """``autograd.grad(..., create_graph=True)`` returned ``grads`` from user code: watch their nodes, so
        that a backward through them (the penalty reached a loss) is seen."""
        site = user_site(2)
        record = self.taken.get(site)
        if record is None:
            keys = frozenset().union(*(self.reach(r) for r in roots if isinstance(r, Tensor)))
            record = self.taken[site] = TakenGradient(site, keys)
        record.taken += 1
        if record.used:
            return
        for grad in grads:
            if isinstance(grad, Tensor) and grad.grad_fn is not None:
                grad.grad_fn.register_prehook(record.fired)
        if record.loss_site is None:
            self.unplaced.append(record)

    def added(self, func: Any, args: tuple, out: Any) -> None:
        """An op that adds terms ran in grad mode while some values carry taint: when a term without gradient but
        with taint (a scalar, or per sample in a sum the loss reduces later) went into a result that has one,
        remember it on the result's node; `check` finds it only on the nodes that sum, scale and reduce a loss."""
        if func not in ADDITIONS or not isinstance(out, Tensor) or out.grad_fn is None:
            return
        stacked = func is torch.stack or func is torch.cat
        per_sample = not stacked and out.numel() != 1
        if not stacked:
            self._gradient_step(args)
        if per_sample and func not in ELEMENTWISE_SUMS:
            return  # not a term of a loss (a layer's `w - lr * g`)
        dead, zero, aside = None, None, []
        for arg in flat(args):
            if isinstance(arg, Tensor):
                if stacked and arg.numel() != 1:
                    continue
                taint = self.taints.get(arg)
                if arg.requires_grad and taint is not None:
                    if per_sample:
                        continue  # a per-sample value with a gradient of its own (a residual's input)
                    carried = self.reach.carrying(arg)
                    cut = {key: chain for key, chain in taint.chains.items() if key not in carried}
                    taint = self._zeroed(cut)
                    kept = {key: chain for key, chain in cut.items() if taint is None or key not in taint.chains}
                    if carried and kept and not _zero(arg):
                        aside.append((Taint(kept), carried))
            elif type(arg) is TaintedFloat:
                taint = self.taints.get(arg)
            elif self.numpy_exits and type(arg).__module__ == "numpy":
                taint = self.numpy_exits.came_back(2)  # a NumPy result (`np_loss + ce`): its ops carry no taint
            else:
                continue
            if taint is not None:  # a term that is exactly 0 (a bonus weighted by 0) adds nothing now
                if _zero(arg):
                    zero = self.taints.merge(zero, taint)
                else:
                    dead = self.taints.merge(dead, taint)
        if dead is not None or zero is not None:
            site = user_site(2)
            if dead is not None:
                out.grad_fn.metadata[_MARK] = (site, dead)
                self._nonzero_at(site)
            if zero is not None:
                out.grad_fn.metadata[_ZERO_MARK] = (site, zero)
            self.marked += 1
        if aside:
            out.grad_fn.metadata[_ASIDE] = (user_site(2), aside)
            self.marked += 1

    def _gradient_step(self, args: tuple) -> None:
        """``w - lr * g`` in grad mode, ``w`` a watched leaf and ``g`` its gradient taken without create_graph=True
        (MAML's inner step): where the step was taken, for a backward whose loss reaches ``w`` through it."""
        tensors = [arg for arg in flat(args) if isinstance(arg, Tensor)]
        keys = frozenset().union(*(self.reach(t) for t in tensors if t.is_leaf and t.requires_grad))
        for arg in tensors:
            taint = None if arg.requires_grad or not keys else self.taints.get(arg)
            for key, chain in taint.chains.items() if taint is not None else ():
                if key in keys and chain[-1].kind == "grad_no_graph":
                    self.first_order.setdefault((key, chain), user_site(3))

    def stepped_without_graph(self, taint: Taint, reached: set[int]) -> None:
        """A backward reached watched tensors whose loss was also computed from a gradient step on them with a
        gradient taken without a graph (`_gradient_step`): the loss reaches them only directly, the term through
        the gradient (the second-order one) is cut. Once per step line and tensor, unless a dead term names it."""
        named = {(key, chain) for _, key, chain in self.found}
        for key, chain in taint.chains.items():
            site = self.first_order.get((key, chain)) if key in reached else None
            if site is not None and (key, chain) not in named:
                index = (site, key, chain)
                self.first_order_found[index] = self.first_order_found.get(index, 0) + 1

    @staticmethod
    def _zeroed(cut: dict[int, Chain]) -> Taint | None:
        """For a term that has gradient, of the watched tensors it carries none to (``cut``): those its values
        came from only through ops that send back zeros (``round``, ``torch.normal``'s parameters) or a distribution's
        ``sample()``, never on purpose. ``.detach()`` of an actor-critic's advantage leaves its term a gradient for the
        actor and is no dead term (`resolve` asks the steps that follow), and indices (``argmax``) select by design."""
        chains = {key: chain for key, chain in cut.items() if all(map(_drawn, chain))}
        return Taint(chains) if chains else None

    def check(self, roots: list[Tensor], reached: set[int]) -> None:
        """A backward ended: the dead terms its loss summed whose watched tensors it reached otherwise."""
        if self.unplaced:
            self._place(roots)
        if not self.marked or not reached:
            return
        stack = [root.grad_fn for root in roots if isinstance(root, Tensor) and root.grad_fn is not None]
        seen: set[int] = set()
        while stack and len(seen) < _WALK:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            for mark, found in ((node.metadata.get(_MARK), self.found),
                                (node.metadata.get(_ZERO_MARK), self.found_zero)):
                site, taint = mark if mark is not None else (None, None)
                for key, chain in taint.chains.items() if taint is not None else ():
                    if key in reached:
                        index = (site, key, chain)
                        found[index] = found.get(index, 0) + 1
            aside = node.metadata.get(_ASIDE)
            for taint, carried in aside[1] if aside is not None else ():
                for key, chain in taint.chains.items():
                    if key in reached:
                        index = (aside[0], key, chain)
                        self.pending[index] = self.pending.get(index, frozenset()) | carried
            if type(node).__name__ in _TERM_NODES:
                stack.extend(child for child, _ in node.next_functions)

    def _nonzero_at(self, site: Site | None) -> None:
        """A dead term that is not zero was added at ``site``: the line adds more than a bonus weighted by 0, and the
        terms it added while they were zero are dead terms too (their values were equal, not their weight)."""
        if self.found_zero:
            for index in [index for index in self.found_zero if index[0] == site]:
                self.found[index] = self.found.get(index, 0) + self.found_zero.pop(index)

    def resolve(self, stepped: list[frozenset[int] | set[int]]) -> None:
        """The steps after the last backward ran (``stepped``: the keys each optimizer that stepped holds): a
        term cut from a tensor those steps update, while none of them updates a tensor the term does carry a
        gradient to, added nothing to any step (IntroVAE's decoder step on an encoded ``xp.detach()``). One
        cut for another optimizer's step (a GAN's discriminator loss on a detached fake) stays silent."""
        for index, carried in self.pending.items():
            key = index[1]
            if any(key in keys for keys in stepped) and all(carried.isdisjoint(keys) for keys in stepped):
                self.found[index] = self.found.get(index, 0) + 1
        self.pending.clear()

    @staticmethod
    def scalar_made(out: Tensor) -> None:
        """A scalar with history was made while gradients taken for a penalty are unused: note its line."""
        if _LOSS_SITE not in out.grad_fn.metadata:
            out.grad_fn.metadata[_LOSS_SITE] = user_site(2)

    def _place(self, roots: list[Tensor]) -> None:
        """Gradients taken for a penalty that this backward did not run through: its loss is where they belong."""
        node = next((r.grad_fn for r in roots if isinstance(r, Tensor) and r.grad_fn is not None), None)
        if node is None:
            return
        made = node.metadata.get(MADE)
        site = made[0][2] if made else node.metadata.get(_LOSS_SITE)
        if site is None:
            return
        for record in self.unplaced:
            if not record.used and record.loss_site is None:
                record.loss_site = site
        self.unplaced.clear()


def _drawn(event: Any) -> bool:
    """A cut of values meant to carry a gradient: an op that sends back zeros (`_ZEROED`), or a distribution's
    ``sample()`` that drew them under its own no_grad (``rsample()`` keeps the gradient)."""
    return event.extra.get("output") in _ZEROED or bool(event.sampled_by)
