"""`--grad-stats`: each watched weight's gradient and weight norms at every backward, and the size of each
optimizer step's update beside its weight, as facts. Weights are the parameters with two or more dimensions, the
ones judged, tabled and drawn: biases and norm scales start at 0 or 1 and would double the cost for nothing.

After each backward, one call takes the norms of every watched parameter's gradient and weight
(``torch._foreach_norm``), kept as one tensor and read back only when the series are read (no sync per
backward on a GPU); weights with two or more dimensions also keep, per unit (row), whether any backward gave it
a non-zero gradient (dead ReLU units never do), until all have. The loss, when the backward's root is one
number, is kept beside them (a copy, read back with the norms), to tell a vanishing gradient from a converged
model.
Around the optimizer steps measured (the first ten, then every tenth), the weights a step holds that have a
series are copied (negated) before it and added after it (one call each), and the update's norm is divided by
the weight's norm at the backward before it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from gradcheck_l2c.record.live import LiveWatched
from gradcheck_l2c.record.stacked import StackPlan, stack_plan, stacked_norms
from gradcheck_l2c.record.torch_internals import (foreach_add_, foreach_neg, foreach_norm, functions_off,
                                                  set_grad_enabled)
from gradcheck_l2c.record.watch import WatchRegistry

Tensor = torch.Tensor
#: The optimizer steps whose update is measured: each of the first ``UPDATES_FIRST``, then every
#: ``UPDATES_EVERY``-th (a copy, a subtraction and a norm per weight: on the CPU, a tenth of a step's cost).
UPDATES_FIRST, UPDATES_EVERY = 10, 10


@dataclass
class GradSeries:
    """One parameter's gradient over the run: ``grad_norms[i]`` and ``weight_norms[i]`` at backward
    ``backwards[i]`` (1-based); ``update_ratios[j]``, |Δw| / |w| of optimizer step ``steps[j]`` (1-based, every
    optimizer's steps counted); ``units`` rows of a weight with two or more dimensions (0 otherwise), of
    which ``dead`` never got a non-zero gradient."""

    key: int
    grad_norms: list[float] = field(default_factory=list)
    weight_norms: list[float] = field(default_factory=list)
    backwards: list[int] = field(default_factory=list)
    update_ratios: list[float] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    units: int = 0
    reached: Any = None  # bool tensor: the rows some backward gave a non-zero gradient
    all_reached: bool = False  # every row has had one: nothing more to check

    @property
    def dead(self) -> int:
        return int((~self.reached).sum()) if self.reached is not None else 0


class GradStats:
    """Keeps the gradient norms of the watched parameters, backward after backward.

    Each backward adds one row (the parameters' keys and one tensor of their norms) and reads nothing back:
    the rows become each parameter's ``GradSeries`` in one conversion when the series are read (or before a
    measured optimizer step needs the last weight norms)."""

    def __init__(self, registry: WatchRegistry) -> None:
        self.registry = registry
        self.count = 0
        self.step_count = 0
        self._series: dict[int, GradSeries] = {}
        self._weights = LiveWatched(registry, lambda w: w.is_parameter and len(w.shape) >= 2)
        self._keys: tuple[int, ...] = ()  # the keys of the last row (rows with the same keys share the tuple)
        self._plan: StackPlan | None = None  # how the gradients and weights of those keys are stacked
        self._rows: list[tuple[tuple[int, ...], Any, int]] = []  # keys, norms (gradients then weights), backward
        self._losses: list[float] = []
        self._new_losses: list[Tensor] = []  # losses of the backwards since the losses were last read
        self._unreached: list[tuple[int, GradSeries]] = []  # (index in the row, series) with rows not yet reached
        # id(optimizer) -> (keys, weights, their copies) from just before its step
        self._before_step: dict[int, tuple[list[int], list[Tensor], list[Tensor]]] = {}

    @property
    def series(self) -> dict[int, GradSeries]:
        """key -> the parameter's series, with every backward so far."""
        self._fold()
        return self._series

    @property
    def losses(self) -> list[float]:
        """The loss of each backward whose root was one number."""
        if self._new_losses:
            try:
                self._losses.extend(torch.stack(self._new_losses).tolist())
            except RuntimeError:  # losses of several dtypes or devices
                self._losses.extend(float(loss) for loss in self._new_losses)
            self._new_losses = []
        return self._losses

    def after_backward(self, args: tuple) -> None:
        """A backward ended: record its loss and every watched parameter's gradient norm."""
        self.count += 1
        grad = torch.is_grad_enabled()
        if grad:
            set_grad_enabled(False)
        try:
            self._record(args)
        except Exception:  # a gradient that cannot be read here must never break the script
            pass
        finally:
            if grad:
                set_grad_enabled(True)

    def _record(self, args: tuple) -> None:
        root = args[0] if args else None
        if isinstance(root, Tensor) and root.numel() == 1 and root.is_floating_point():
            self._new_losses.append(root.reshape(()).clone())  # a copy: the script may change its loss later
        keys, grads, weights = [], [], []
        for entry, tensor, gradient in self._weights.gradients():
            if gradient.layout is not torch.strided or not gradient.is_floating_point():
                continue
            keys.append(entry.key)
            grads.append(gradient)
            weights.append(tensor)
        if not keys:
            return
        if tuple(keys) != self._keys:
            self._new_keys(keys, grads)
            self._plan = stack_plan(grads + weights)
        norms = self._norms(grads + weights)
        self._rows.append((self._keys, norms, self.count))
        if self._unreached:
            self._reach(grads)

    def _norms(self, tensors: list[Tensor]) -> Any:
        """The norms of ``tensors`` in order, as one tensor (a list of numbers if their dtypes or devices differ)."""
        if self._plan is not None:
            try:
                return stacked_norms(tensors, self._plan)
            except RuntimeError:  # the tensors changed dtype or device since the plan was made
                self._plan = None
        found = foreach_norm(tensors)
        try:
            return torch.stack(found)
        except RuntimeError:  # norms of several dtypes or devices
            return [float(n) for n in found]

    def _new_keys(self, keys: list[int], grads: list[Tensor]) -> None:
        self._keys = tuple(keys)
        for i, key in enumerate(keys):
            if key not in self._series:
                units = grads[i].shape[0] if grads[i].dim() >= 2 else 0
                self._series[key] = GradSeries(key, units=units)
        self._unreached = [(i, self._series[key]) for i, key in enumerate(keys)
                           if self._series[key].units and not self._series[key].all_reached]

    def _reach(self, grads: list[Tensor]) -> None:
        """Weights with two or more dimensions: the rows that got a non-zero gradient, until all have."""
        for i, series in self._unreached:
            moved = grads[i].flatten(1).abs().amax(1) > 0
            series.reached = moved if series.reached is None else series.reached | moved
            series.all_reached = bool(series.reached.all())
        self._unreached = [(i, series) for i, series in self._unreached if not series.all_reached]

    def _fold(self) -> None:
        """The rows not yet read into the series: rows of the same keys in one conversion."""
        rows, self._rows = self._rows, []
        start = 0
        while start < len(rows):
            keys = rows[start][0]
            end = start + 1
            while end < len(rows) and rows[end][0] is keys:
                end += 1
            group = rows[start:end]
            try:
                columns = torch.stack([norms for _, norms, _ in group]).t().tolist()
            except (RuntimeError, TypeError):  # norms of several dtypes or devices, kept as numbers
                table = [norms if isinstance(norms, list) else norms.tolist() for _, norms, _ in group]
                columns = [list(column) for column in zip(*table)]
            backwards = [count for _, _, count in group]
            for i, key in enumerate(keys):
                series = self._series[key]
                series.grad_norms.extend(columns[i])
                series.weight_norms.extend(columns[len(keys) + i])
                series.backwards.extend(backwards)
            start = end

    def before_step(self, optimizer: Any) -> None:
        """An optimizer is about to step: on the steps measured, copy the weights it holds that have a series."""
        self.step_count += 1
        self._before_step.pop(id(optimizer), None)
        if self.step_count > UPDATES_FIRST and self.step_count % UPDATES_EVERY:
            return
        keys, weights = [], []
        for group in optimizer.param_groups:
            for tensor in group["params"]:
                key = self.registry.key_of(tensor)
                if key is not None and key in self._series and tensor.layout is torch.strided \
                        and tensor.is_floating_point():
                    keys.append(key)
                    weights.append(tensor)
        if keys:
            try:
                with functions_off(), torch.no_grad():
                    self._before_step[id(optimizer)] = (keys, weights, foreach_neg(weights))
            except Exception:  # a weight that cannot be copied here (out of memory) must never break the script
                pass

    def after_step(self, optimizer: Any) -> None:
        """The step ended: each copied weight's update norm over its norm at the last backward."""
        before = self._before_step.pop(id(optimizer), None)
        if before is None:
            return
        keys, weights, copies = before
        try:
            with functions_off(), torch.no_grad():
                foreach_add_(copies, weights)  # -before + after
                found = foreach_norm(copies)
                try:
                    norms = torch.stack(found).tolist()
                except RuntimeError:  # norms of several dtypes or devices
                    norms = [float(n) for n in found]
        except Exception:  # an update that cannot be read here must never break the script
            return
        self._fold()  # the weights' norms at the last backward
        for key, norm in zip(keys, norms):
            series = self._series[key]
            weight = series.weight_norms[-1]
            series.update_ratios.append(norm / weight if weight > 0 else (math.inf if norm > 0 else 0.0))
            series.steps.append(self.step_count)
