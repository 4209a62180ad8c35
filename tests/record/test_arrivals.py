"""Parameters that get their gradient at every step are noted in bulk after their first backwards: what depends on
the backward that last reached each (a step that finds the gradients erased since) still reads it right."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record.state import TraceState
from gradcheck_l2c.record.watch import WatchSpec


def test_gradients_erased_before_every_step_are_counted_at_every_step() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(5, 4)
    with trace() as traced:
        for _ in range(6):
            model(x).pow(2).mean().backward()
            optimizer.zero_grad()  # erases what the backward just made
            optimizer.step()
    erased = [f for f in traced.findings if f.kind == "optimizer"]
    assert [(f.count, "erased" in f.message) for f in erased] == [(6, True)]
    assert all(w.got_grad for w in traced.watched)


def _arrivals_of(parameters: list[nn.Parameter]):
    """A trace's arrival bookkeeping watching ``parameters`` (alive while the caller holds them), and a backward that
    gave gradients to some of them."""
    state = TraceState(WatchSpec())
    for param in parameters:
        param.grad = torch.ones_like(param)  # nonzero: each is steady from its first gradient on
        state.registry.watch_leaf(param, None)
    arrivals = state.backwards.arrivals

    def backward(*reached: int) -> None:
        state.clock.backwards += 1
        arrivals.reached(frozenset(reached), state.clock.backwards)

    return state.registry, arrivals, backward


def test_the_backward_that_last_reached_each_tensor_is_read_right_while_the_reached_set_changes() -> None:
    parameters = [nn.Parameter(torch.ones(2)) for _ in range(4)]
    registry, arrivals, backward = _arrivals_of(parameters)
    backward(0, 1, 2, 3)  # 1: first gradients, noted one by one
    backward(0, 1, 2, 3)  # 2-3: all four again
    backward(0, 1, 2, 3)
    backward(0, 1)  # 4-5: two of them (a GAN's discriminator alone)
    backward(0, 1)
    backward(0, 2)  # 6: another two
    assert [registry.last_reached(watched) for watched in registry.all] == [6, 5, 6, 3]
    arrivals.write_back()
    assert [watched.last_reached for watched in registry.all] == [6, 5, 6, 3]
    backward(3)  # 7: after the judge's read, the numbers go on from there
    arrivals.write_back()
    assert [watched.last_reached for watched in registry.all] == [6, 5, 6, 7]
    assert all(watched.ref() is param for watched, param in zip(registry.all, parameters))
