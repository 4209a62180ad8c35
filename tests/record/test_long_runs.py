"""A loop that makes a fresh ``requires_grad=True`` leaf at every step stays cheap to trace: what the trace
keeps of each step's leaf lets its graph and values go, and the tensors are still judged and named."""
from __future__ import annotations

import gc
import tracemalloc
import weakref

import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.watch import WatchSpec


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


def test_the_tensors_an_optimizer_holds_are_marked_however_late_they_are_watched() -> None:
    """A step marks the watched tensors its optimizer holds; between steps, only tensors watched since are looked at
    (a fresh leaf made at every step must not walk every parameter at every step), and a parameter list that grew or
    a group added makes it look at them all again."""
    state = TraceState(WatchSpec())
    registry, log = state.registry, state.optimizers
    a, b, c, d = (nn.Parameter(torch.ones(2)) for _ in range(4))
    optimizer = torch.optim.SGD([a, b], lr=0.1)
    registry.watch_leaf(a, None)
    log.record_for(optimizer, None)
    fresh = torch.ones(2, requires_grad=True)
    registry.watch_leaf(fresh, None, user_leaf=True)  # not the optimizer's
    registry.watch_leaf(b, None)  # watched after the optimizer's first step
    registry.watch_leaf(c, None)
    registry.watch_leaf(d, None)

    def marked() -> set[int]:
        record = log.record_for(optimizer, None)
        assert {w.key for w in registry.all if w.optimized} == record.keys
        return record.keys

    assert marked() == {registry.key_of(a), registry.key_of(b)}
    optimizer.param_groups[0]["params"].append(c)  # the same group, one more parameter
    assert marked() == {registry.key_of(a), registry.key_of(b), registry.key_of(c)}
    e = nn.Parameter(torch.ones(2))
    optimizer.param_groups[0]["params"].append(e)
    assert marked() == {registry.key_of(a), registry.key_of(b), registry.key_of(c)}  # not watched yet
    registry.watch_leaf(e, None)  # watched only after the list grew: found among the tensors watched since
    assert registry.key_of(e) in marked()
    optimizer.add_param_group({"params": [d]})
    assert marked() == {registry.key_of(t) for t in (a, b, c, d, e)}
    assert not registry.get(fresh).optimized


def test_a_model_built_per_task_is_forgotten_once_gone() -> None:
    """A loop that builds a model per task (MAML's inner copies, a k-fold's folds): each discovery pass (every 50th
    backward) walks the modules seen, so the gone ones are dropped, not walked again at every later pass."""
    torch.manual_seed(0)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    with trace() as traced:
        for _ in range(300):
            model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
            nn.functional.cross_entropy(model(x), y).backward()
        seen = len(traced._state.registry.modules)
    assert seen <= 150  # those of the tasks since the last pass (3 a task), not the 900 of all 300 tasks
    assert len(traced.watched) == 1200 and all(w.got_grad for w in traced.watched)
    assert traced.findings == []


def test_a_sweep_that_logs_each_loss_before_backward_keeps_no_model_alive() -> None:
    """A sweep that trains a new model per trial and logs ``loss.item()`` before each backward, as DETR's engine
    does: the number names every parameter until the step settles the last of them, and the events of the others
    must then let go of the graph they hold, which reaches the trial's model (so must those of the logits read under
    ``no_grad`` for a metric). Each trial's model is freed once the trial returns, under the trace as without it; the
    trace still sees every parameter learn."""
    torch.manual_seed(0)
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    models: list[weakref.ref] = []
    metrics: list[torch.Tensor] = []

    def trial() -> float:
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        models.append(weakref.ref(model[0].weight))
        for _ in range(3):
            optimizer.zero_grad()
            logits = model(x)
            loss = nn.functional.cross_entropy(logits, y)
            logged = loss.item()
            with torch.no_grad():  # a matcher's cost, a metric: computed from the live logits, no gradient wanted
                metrics.append(logits.softmax(1)[:, 0].sum())
            loss.backward()
            optimizer.step()
        return logged

    with trace() as traced:
        losses = [trial() for _ in range(5)]
        gc.collect()
        alive = [number for number, ref in enumerate(models) if ref() is not None]
    assert alive == [] and len(losses) == 5
    assert len(traced.watched) == 20 and all(w.got_grad for w in traced.watched)
    assert traced.findings == []
