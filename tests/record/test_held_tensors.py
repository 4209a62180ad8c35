"""Whether any optimizer of the trace holds a tensor (`record/held.py`): the same answer as asking every optimizer
record in the order they were made, without that walk, so that a loop building a model and an optimizer per fold
pays the same at its hundredth fold as at its first."""
from __future__ import annotations

import gc

import pytest
import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record.optimizers import OptimizerRecord
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.watch import WatchSpec


def asked_in_order(log, tensor: torch.Tensor) -> bool:
    return any(record.holds(tensor) for record in log.records)


def test_the_answer_is_that_of_every_record_asked_in_order() -> None:
    """Optimizers die (their records leave the live ones, some only when an optimizer is made where one was),
    parameters outlive them or die with them, groups are added later, and new tensors reuse dead ones' ids."""
    log = TraceState(WatchSpec()).optimizers
    pool: list[torch.Tensor] = []
    kept = [nn.Parameter(torch.ones(2)) for _ in range(3)]  # held by optimizers that die, and by later ones
    for round_ in range(12):
        fresh = [nn.Parameter(torch.ones(2)) for _ in range(2)]
        optimizer = torch.optim.SGD([*fresh, kept[round_ % 3]], lr=0.1)
        log.record_for(optimizer, None)
        if round_ % 4 == 1:
            optimizer.add_param_group({"params": [kept[(round_ + 1) % 3]]})  # read again when next asked
        pool += fresh
        if round_ % 3 == 2:
            del optimizer, fresh  # the optimizer and its own parameters die: ids free for the next round's
            gc.collect()
            log.reached(set())  # a backward prunes the dead optimizers' records from the live ones
        pool = [t for t in pool if t is not None]
        strangers = [torch.ones(2, requires_grad=True) for _ in range(2)]  # in no optimizer
        for tensor in [*pool, *kept, *strangers]:
            assert log.held(tensor) is asked_in_order(log, tensor)
    assert len(log.records) == 12 and len(log.live) < 12


def test_a_loop_that_builds_an_optimizer_per_fold_asks_a_bounded_number_of_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []
    holds = OptimizerRecord.holds
    monkeypatch.setattr(OptimizerRecord, "holds", lambda record, tensor: asked.append(1) or holds(record, tensor))
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))

    def fold() -> None:
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

    per_fold = []
    with trace() as traced:
        for _ in range(40):
            asked.clear()
            fold()
            per_fold.append(len(asked))
    # each fold's 4 parameters ask at their first gradient the optimizers still live (the fold's own): not the
    # records of every earlier fold's optimizer (160 at the 40th fold when each was asked in turn)
    assert max(per_fold[20:]) <= max(per_fold[:20]) <= 8
    assert traced.findings == []
