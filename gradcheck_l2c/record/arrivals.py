"""What a backward's gradients change for each watched tensor they reached: its first gradient, the zero checks,
the backward that last reached it.

A tensor the previous backward reached too, whose first gradient and zero checks are behind it, has only that
number to change: such tensors are noted together (`WatchRegistry.together`: the same set at every step moves one
number), so a training step pays a set operation for its parameters, not a loop over them. Their
``Watched.last_reached`` lags meanwhile (``WatchRegistry.last_reached`` reads the current value), and `write_back`
brings the fields up to date before the judge reads them.

A zero check is a torch op, the costliest part of a fresh leaf's first gradient: once the leaves one line makes
got gradients holding nonzeros `TRUSTED` times in a row (a per-sample input made at every step), that line's
later leaves are not checked, but for one in `RECHECK`. One whose gradient held only zeros keeps its line checked
for good, so a leaf cut by a zero-derivative op, or never reaching the loss's values, is still told.
"""
from __future__ import annotations

from gradcheck_l2c.record.arrival_hooks import hooked
from gradcheck_l2c.record.optimizers import OptimizerLog
from gradcheck_l2c.record.taint import TaintStore
from gradcheck_l2c.record.updates import nonzero
from gradcheck_l2c.record.watch import WatchRegistry


#: Leaves of one line whose first gradients held nonzeros, in a row, after which that line's leaves are not checked:
#: a per-sample input made at every step would pay a torch op per step to say what its first leaves said. Every
#: `RECHECK`-th leaf of a trusted line is checked all the same: a loop that turns to a zero-derivative op later on
#: (a quantised input from the second epoch) is told within that many steps.
TRUSTED = 16
RECHECK = 64
_NEVER = -(1 << 62)  # a line one of whose leaves got a first gradient of zeros: its leaves are always checked


class Arrivals:
    """Notes, per backward, the watched tensors it gave a gradient."""

    def __init__(self, registry: WatchRegistry, taints: TaintStore, optimizers: OptimizerLog) -> None:
        self.registry, self.taints, self.optimizers = registry, taints, optimizers
        self._steady: set[int] = set()  # reached by the last backward, with nothing but the number left to note
        # id(Site) of a line that makes user leaves -> how many of them in a row got a first gradient that held
        # nonzeros (`_NEVER` once one held only zeros); the Sites are shared (`WatchRegistry.shared`): ids stay theirs
        self._nonzero_lines: dict[int, int] = {}

    def reached(self, keys: frozenset[int], backwards: int) -> None:
        """Backward number ``backwards`` gave the tensors ``keys`` their gradient."""
        if self.optimizers.left_out.told:
            self.optimizers.left_out.look(keys)
        steady = self._steady & keys if self._steady else set()  # a set, not frozen like keys: grown below
        if steady:
            if steady != self.registry.together[0]:  # else the same tensors again: their one number moves on
                self._part_together()
            self.registry.together = steady, backwards  # with those that get steady below, reached now too
        if not steady:
            rest = keys
        elif len(keys) - len(steady) == 1:  # one new (a fresh leaf beside a model's parameters): no walk of them all
            rest = keys - steady
        elif len(steady) < len(keys):
            rest = [key for key in keys if key not in steady]  # in the set's own order: events keep theirs
        else:
            rest = ()
        registry, optimizers, lines = self.registry, self.optimizers, self._nonzero_lines
        for key in rest:
            watched = registry.all[key]
            watched.got_grad = True
            watched.last_reached = backwards
            if not watched.ever_grad:
                watched.ever_grad, watched.first_reached = True, backwards
                if not (optimizers.live and optimizers.holding(key)) and not watched.grad_used:
                    self.taints.settle(key)  # else once a step finds its gradient
                if optimizers.records and (watched.is_parameter or watched.user_leaf):
                    optimizers.first_gradient(watched)
            if watched.zero_checks < 2 and not watched.nonzero_grad:
                line = id(watched.site) if watched.user_leaf and watched.site is not None else None
                if line is not None:
                    seen = lines.get(line, 0)
                    if seen >= TRUSTED and seen % RECHECK:  # its line is trusted, and this is not a leaf to look at
                        lines[line] = seen + 1
                        steady.add(key)
                        continue
                tensor = watched.ref()
                grad = tensor.grad if tensor is not None else None
                if grad is not None:
                    watched.zero_checks += 1
                    watched.nonzero_grad = nonzero(grad)
                    if line is not None and watched.zero_checks == 1:
                        lines[line] = lines.get(line, 0) + 1 if watched.nonzero_grad else _NEVER
            if watched.nonzero_grad or watched.zero_checks >= 2:
                steady.add(key)
                if hooked(watched):  # nothing left to note but its arrivals: no hook call per backward for them
                    registry.polling.joining.append(key)
        self._steady = steady

    def unsteady(self) -> None:
        """Some watched tensors were marked as without gradient: the next backward that reaches them notes them
        one by one again."""
        self._steady = set()

    def _part_together(self) -> None:
        """The tensors reached together so far each keep that backward's number (`WatchRegistry.reached_at`)."""
        together, at = self.registry.together
        self.registry.reached_at.update(dict.fromkeys(together, at))
        self.registry.together = set(), 0

    def write_back(self) -> None:
        """Bring every ``Watched.last_reached`` up to date (before the judge reads them)."""
        registry = self.registry
        self._part_together()
        for key, backwards in registry.reached_at.items():
            watched = registry.all[key]
            if backwards > watched.last_reached:
                watched.last_reached = backwards
        registry.reached_at.clear()
