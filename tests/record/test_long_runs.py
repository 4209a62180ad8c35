"""A loop that makes a fresh ``requires_grad=True`` leaf at every step stays cheap to trace: what the trace
keeps of each step's leaf lets its graph and values go, and the tensors are still judged and named."""
from __future__ import annotations

import gc
import tracemalloc
import weakref

import torch

from gradcheck_l2c import trace


def train(steps: int, freed: list[weakref.ref]) -> list[float]:
    weight, logged = torch.randn(4, 4), []
    for _ in range(steps):
        x = torch.randn(4, requires_grad=True)
        loss = torch.tanh(weight @ x).pow(2).sum()
        logged.append(loss.item())  # a cut of values whose gradient is still to come
        loss.backward()
        freed.append(weakref.ref(x))
    return logged


def test_fresh_leaves_logged_before_backward_are_freed_and_still_judged() -> None:
    freed: list[weakref.ref] = []
    with trace() as traced:
        logged = train(40, freed)
        gc.collect()
        alive = [step for step, ref in enumerate(freed) if ref() is not None]
    assert alive == []  # no step's leaf (nor its graph) outlives the step, although its logged loss lives
    assert len(logged) == 40
    watched = traced.watched
    assert len(watched) == 40 and all(w.got_grad for w in watched)
    assert {w.name for w in watched} == {"x"}  # the first backwards saw the line's leaves in `x`: all are named so
    assert traced.findings == []


def test_a_freed_leaf_leaves_only_its_record_behind() -> None:
    """What the trace keeps of each step's freed leaf: its record (a slotted object, its key among the settled
    ones), not the dead weak reference or hook that watched it: memory stays within ~500 bytes a step."""
    weight = torch.randn(4, 4)

    def steps(count: int) -> None:
        for _ in range(count):
            x = torch.randn(4, requires_grad=True)
            torch.tanh(weight @ x).pow(2).sum().backward()

    with trace() as traced:
        steps(200)  # the trace's own first-backward work and caches
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        steps(4000)
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
    kept = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert kept / 4000 < 500
    assert len(traced.watched) == 4200 and all(w.got_grad for w in traced.watched)
