"""`--grad-stats`: each watched parameter's gradient and weight norms at every backward, and the size of each
optimizer step's update beside its weight, as facts.

After each backward, one call takes the norms of every watched parameter's gradient and one those of the
weights (``torch._foreach_norm``), read back together; weights with two or more dimensions also keep, per
unit (row), whether any backward gave it a non-zero gradient (dead ReLU units never do), until all have. The loss, when the
backward's root is one number, is kept beside them, to tell a vanishing gradient from a converged model.
Around the optimizer steps measured (the first ten, then every tenth), the weights a step holds that have a
series are copied (negated) before it and added after it (one call each), and the update's norm is divided by
the weight's norm at the backward before it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

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
    """Keeps the gradient norms of the watched parameters, backward after backward."""

    def __init__(self, registry: WatchRegistry) -> None:
        self.registry = registry
        self.series: dict[int, GradSeries] = {}
        self.losses: list[float] = []
        self.count = 0
        self.step_count = 0
        # id(optimizer) -> (keys, weights, their copies) from just before its step
        self._before_step: dict[int, tuple[list[int], list[Tensor], list[Tensor]]] = {}

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
            self.losses.append(float(root))
        keys, grads, weights = [], [], []
        for watched in self.registry.all:
            tensor = watched.ref() if watched.is_parameter else None
            gradient = getattr(tensor, "grad", None)
            if gradient is None or gradient.layout is not torch.strided or not gradient.is_floating_point():
                continue
            keys.append(watched.key)
            grads.append(gradient)
            weights.append(tensor)
        if not keys:
            return
        found = [*foreach_norm(grads), *foreach_norm(weights)]
        try:
            norms = torch.stack(found).tolist()
        except RuntimeError:  # norms of several dtypes or devices
            norms = [float(n) for n in found]
        for i, key in enumerate(keys):
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = GradSeries(key, units=grads[i].shape[0] if grads[i].dim() >= 2 else 0)
            series.grad_norms.append(norms[i])
            series.weight_norms.append(norms[len(keys) + i])
            series.backwards.append(self.count)
            if series.units and not series.all_reached:
                moved = grads[i].flatten(1).abs().amax(1) > 0
                series.reached = moved if series.reached is None else series.reached | moved
                series.all_reached = bool(series.reached.all())

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
                if key is not None and key in self.series and tensor.layout is torch.strided \
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
        for key, norm in zip(keys, norms):
            series = self.series[key]
            weight = series.weight_norms[-1]
            series.update_ratios.append(norm / weight if weight > 0 else (math.inf if norm > 0 else 0.0))
            series.steps.append(self.step_count)
