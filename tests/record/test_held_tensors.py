"""Whether any optimizer of the trace holds a tensor (`record/held.py`): the same answer as asking every optimizer
record in the order they were made, without that walk (a loop building a model and an optimizer per fold pays the
same at its hundredth fold as at its first: `test_flat_work.py`)."""
from __future__ import annotations

import gc
import weakref

import torch
from torch import nn

from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.watch import WatchSpec


def asked_in_order(log, tensor: torch.Tensor) -> bool:
    return any(record.holds(tensor) for record in log.records)


def test_the_answer_is_that_of_every_record_asked_in_order() -> None:
    """Optimizers die with the parameters only they held (their records leave the live ones at a backward, or when an
    optimizer is made where one was), parameters outlive the optimizers that held them, groups are added later, and
    new tensors take dead ones' ids."""
    log = TraceState(WatchSpec()).optimizers
    kept = [nn.Parameter(torch.ones(2)) for _ in range(3)]
    orphans: list[torch.Tensor] = []  # each held by one optimizer only, and outliving it
    made: list[weakref.ref] = []
    for round_ in range(12):
        fresh = [nn.Parameter(torch.ones(2)) for _ in range(2)]
        orphans.append(nn.Parameter(torch.ones(2)))
        optimizer = torch.optim.SGD([*fresh, kept[round_ % 3], orphans[-1]], lr=0.1)  # the last round's dies
        log.record_for(optimizer, None)
        if round_ % 4 == 1:
            optimizer.add_param_group({"params": [kept[(round_ + 1) % 3]]})  # read again when next asked
        if round_ % 3 == 2:
            log.reached(set())  # a backward drops the gone optimizers' records from the live ones
        made += [weakref.ref(tensor) for tensor in fresh]
        del fresh
        gc.collect()
        strangers = [torch.ones(2, requires_grad=True) for _ in range(2)]  # in no optimizer
        for tensor in [*(ref() for ref in made if ref() is not None), *kept, *orphans, *strangers]:
            assert log.held(tensor) is asked_in_order(log, tensor)
    assert len(log.records) == 12 and len(log.live) < 12 and all(log.held(orphan) for orphan in orphans)
    assert sum(ref() is not None for ref in made) == 2  # the last optimizer's own


def test_asking_re_reads_the_groups_of_the_live_optimizers_the_walk_in_order_would_have() -> None:
    """Asking an optimizer's record re-reads its groups when their number changed; the walk in order stops at the
    first record that holds the tensor, so a live optimizer made after a gone one that held it is not re-read."""
    log = TraceState(WatchSpec()).optimizers
    shared = nn.Parameter(torch.ones(2))
    first = torch.optim.SGD([shared], lr=0.1)
    log.record_for(first, None)
    second = torch.optim.SGD([nn.Parameter(torch.ones(2))], lr=0.1)
    later = log.record_for(second, None)
    second.add_param_group({"params": [nn.Parameter(torch.ones(2))]})
    del first
    gc.collect()
    log.reached(set())  # the first optimizer's record leaves the live ones
    assert log.held(shared) and len(later.params) == 1  # found in the gone record first: the second not re-read
    assert not log.held(torch.ones(2, requires_grad=True)) and len(later.params) == 2  # asked in full: re-read
