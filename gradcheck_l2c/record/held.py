"""Whether any optimizer of the trace holds a tensor, without a walk of every optimizer ever made.

A loop that builds a model and its optimizer per fold, task or round asks at each new parameter's first gradient
whether any optimizer holds it; asking every record in the order they were made grew with the optimizers built so far.
The live ones are still asked in that order (asking may re-read an optimizer's groups, `OptimizerRecord.holds`);
each gone from `OptimizerLog.live` no longer changes what it holds, and is looked up at once.
"""
from __future__ import annotations

import weakref
from typing import Any

import torch


class HeldTensors:
    """``held(tensor)``: what ``any(record.holds(tensor) for record in records)`` tells, in the same order."""

    def __init__(self, live: dict[int, Any]) -> None:
        self.live = live  # `OptimizerLog.live`: its records in the order they were made (`position`)
        # id(tensor) -> the earliest place among the gone records holding it, and the reference they hold it by
        self._gone: dict[int, tuple[int, weakref.ref]] = {}

    def retire(self, record: Any) -> None:
        """``record`` left the live ones: its optimizer is gone, so what it holds never changes again."""
        gone, position = self._gone, record.position
        for ident, ref in record.refs.items():
            tensor = ref()
            if tensor is None:  # a tensor made later at the same address is not the one it held
                continue
            held = gone.get(ident)
            if held is None or held[1]() is not tensor or position < held[0]:
                gone[ident] = (position, ref)

    def __call__(self, tensor: torch.Tensor) -> bool:
        held = self._gone.get(id(tensor))
        first_gone = held[0] if held is not None and held[1]() is tensor else -1
        for record in self.live.values():
            if 0 <= first_gone < record.position:
                return True  # a gone record made before this one holds it: the walk would have stopped there
            if record.holds(tensor):
                return True
        return first_gone >= 0
