"""`--grad-stats`: each watched parameter's gradient and weight norms at every backward, as facts.

After each backward, one call takes the norms of every watched parameter's gradient and one those of the
weights (``torch._foreach_norm``), read back together; weights with two or more dimensions also keep, per
unit (row), whether any backward gave it a non-zero gradient (dead ReLU units never do), until all have. The loss, when the
backward's root is one number, is kept beside them, to tell a vanishing gradient from a converged model.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from gradcheck_l2c.record.torch_internals import foreach_norm, set_grad_enabled
from gradcheck_l2c.record.watch import WatchRegistry

Tensor = torch.Tensor


@dataclass
class GradSeries:
    """One parameter's gradient over the run: ``grad_norms[i]`` and ``weight_norms[i]`` at backward
    ``backwards[i]`` (1-based); ``units`` rows of a weight with two or more dimensions (0 otherwise), of
    which ``dead`` never got a non-zero gradient."""

    key: int
    grad_norms: list[float] = field(default_factory=list)
    weight_norms: list[float] = field(default_factory=list)
    backwards: list[int] = field(default_factory=list)
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
