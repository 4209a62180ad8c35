"""Optimizers that have not stepped yet, looked at by the run's first backwards: the backward that reaches only one's
parameters (where its missing ``step()`` belongs), and the names the script holds it by (its one ``step()`` line)."""
from __future__ import annotations

import os
from typing import Any

from gradcheck_l2c.record.locations import USER, Site, frame_kind
from gradcheck_l2c.record.optimizers import OptimizerRecord
from gradcheck_l2c.record.step_calls import step_call_guard


def lone_backward(live: dict[int, OptimizerRecord], frame: Any, reached: set[int]) -> None:
    """Early backwards (the first three): remember, for an optimizer that has not stepped yet whose parameters
    this backward reached, and no other optimizer's, the backward's line (a discriminator's own backward); where it
    reached other optimizers' parameters too, the line and those optimizers (a joint loss stepped by one of them)."""
    waiting = _waiting(live)
    frame = _user(frame)
    if not waiting or frame is None:
        return
    for record in waiting:
        if record.lone_backward is not None or not reached & record.keys:
            continue
        others = tuple(other.position for other in live.values() if other is not record and reached & other.keys)
        site = Site(os.path.abspath(frame.f_code.co_filename), frame.f_lineno)
        if not others:
            record.lone_backward = site
        elif record.shared_backward is None:
            record.shared_backward, record.shared_with = site, others


def unstepped_names(live: dict[int, OptimizerRecord], frame: Any) -> None:
    """Early backwards (the second and third): name the optimizers that have not stepped yet from the
    variables of the backward's frame, and of the objects they hold (``self.optimizer``)."""
    waiting = _waiting(live)
    frame = _user(frame)
    if not waiting or frame is None:
        return
    for name, value in frame.f_locals.items():
        owned = vars(value).items() if hasattr(value, "__dict__") and not isinstance(value, type) else ()
        for label, item in [(name, value), *owned]:
            for record in waiting:
                if item is record.optimizer():
                    record.names.add(label)
                    record.step_call, record.step_guard = step_call_guard(frame.f_code, record.names)


def _user(frame: Any) -> Any:
    """The innermost user frame at or above ``frame``, or None."""
    while frame is not None and frame_kind(frame.f_code.co_filename) != USER:
        frame = frame.f_back
    return frame


def _waiting(live: dict[int, OptimizerRecord]) -> list[OptimizerRecord]:
    """The live optimizers that have not stepped yet."""
    return [r for r in live.values() if r.step_order < 0 and r.optimizer() is not None]
