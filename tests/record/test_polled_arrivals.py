"""Leaves that got their gradient with nothing left to note but the next one lose their hook and are polled: their
``.grad`` is read around each outermost backward (`record/arrival_hooks.py`). Every story below must be told exactly
as the hooks told it: the same report and the same verdict per tensor, with polling on and with it off."""
from __future__ import annotations

import sys
import threading

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.checkpoint import checkpoint

from gradcheck_l2c import trace
from gradcheck_l2c.record.arrival_hooks import Polling, backward_ended, backward_starts, run_elsewhere
from gradcheck_l2c.record.torch_internals import has_post_accumulate_hooks
from gradcheck_l2c.record.watch import WatchRegistry


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def cut_after_warmup() -> None:
    """The body learns for three steps, then a round trip through Python floats cuts it off the loss."""
    model, x = _model(), torch.randn(5, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(6):
        hidden = model[1](model[0](x))
        if step >= 3:
            hidden = torch.tensor(hidden.tolist())
        optimizer.zero_grad()
        model[2](hidden).pow(2).mean().backward()
        optimizer.step()


def step_in_backward_after_warmup() -> None:
    """From the fourth step on, each parameter's own hook steps it and clears its gradient (an optimizer fused into
    the backward), while the old optimizer still steps: the gradients arrived, though ``.grad`` is None when the
    backward ends, and that step finds them erased."""
    model, x = _model(), torch.randn(5, 4)

    def step_and_clear(param: torch.Tensor) -> None:
        with torch.no_grad():
            param -= 0.1 * param.grad
        param.grad = None

    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(6):
        if step == 3:
            for param in model.parameters():
                param.register_post_accumulate_grad_hook(step_and_clear)
        model(x).pow(2).mean().backward()
        optimizer.step()
        optimizer.zero_grad()


def erased_after_warmup() -> None:
    """Three correct steps, then ``zero_grad()`` moves between the backward and the step: three steps find their
    gradients erased, which only the arrivals of each of those backwards tell."""
    model, x = _model(), torch.randn(5, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(6):
        if step < 3:
            optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        if step >= 3:
            optimizer.zero_grad()
        optimizer.step()


def accumulated() -> None:
    """Gradients accumulated over two backwards before each step: the second writes into the first's tensor."""
    model, x = _model(), torch.randn(5, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(8):
        model(x[step % 5:]).pow(2).mean().backward()
        if step % 2:
            optimizer.step()
            optimizer.zero_grad()


def zeroed_in_place_in_turn() -> None:
    """A critic and an actor cleared with ``zero_grad(set_to_none=False)``: every polled leaf has a gradient when each
    backward starts. From the fourth step on the actor's loss is cut from the actor: the backward there writes only into
    the critic's gradients, which the critic's next ``zero_grad`` clears unread (a warning), the actor's are left as
    they were (to take them as arrived would hide that warning)."""
    critic, actor, x = _model(), nn.Linear(4, 4), torch.randn(5, 4)
    critic_optimizer = torch.optim.SGD(critic.parameters(), lr=0.1)
    actor_optimizer = torch.optim.SGD(actor.parameters(), lr=0.1)
    for step in range(6):
        critic_optimizer.zero_grad(set_to_none=False)
        critic(actor(x).detach()).pow(2).mean().backward()
        critic_optimizer.step()
        actor_optimizer.zero_grad(set_to_none=False)
        if step < 3:
            (-critic(actor(x)).mean()).backward()
        else:
            (-critic(actor(x).detach()).mean()).backward()
        actor_optimizer.step()


def two_models_in_turn() -> None:
    """A critic and an actor, each with its own backward: each backward reaches only one of them."""
    critic, actor, x = _model(), nn.Linear(4, 4), torch.randn(5, 4)
    critic_optimizer = torch.optim.SGD(critic.parameters(), lr=0.1)
    actor_optimizer = torch.optim.SGD(actor.parameters(), lr=0.1)
    for _ in range(5):
        critic_optimizer.zero_grad()
        critic(actor(x).detach()).pow(2).mean().backward()
        critic_optimizer.step()
        actor_optimizer.zero_grad()
        (-critic(actor(x)).mean()).backward()
        actor_optimizer.step()


def checkpointed() -> None:
    """The first layer runs under reentrant checkpointing: its gradients come from a backward inside the backward,
    after the last layer's. From the fourth step on, ``zero_grad()`` erases them all before the steps of the
    optimizers of each."""
    model, x = _model(), torch.randn(5, 4, requires_grad=True)
    body = torch.optim.SGD(model[0].parameters(), lr=0.1)
    head = torch.optim.SGD(model[2].parameters(), lr=0.1)
    for step in range(6):
        hidden = checkpoint(model[0], x, use_reentrant=True)
        model[2](model[1](hidden)).pow(2).mean().backward()
        if step >= 3:
            body.zero_grad()
            head.zero_grad()
        body.step()
        head.step()
        body.zero_grad()
        head.zero_grad()


def backward_in_a_thread() -> None:
    """After warmup, the backward runs on a thread the trace does not cover."""
    model, x = _model(), torch.randn(5, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(6):
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        if step < 3:
            loss.backward()
        else:
            worker = threading.Thread(target=loss.backward, name="backward worker")
            worker.start()
            worker.join()
        optimizer.step()


def gradients_assigned() -> None:
    """The script sets ``.grad`` itself between backwards (a gradient from elsewhere), then steps."""
    model, x = _model(), torch.randn(5, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(6):
        optimizer.zero_grad()
        model(x).pow(2).mean().backward()
        if step == 4:
            model[0].weight.grad = torch.zeros_like(model[0].weight)
        optimizer.step()


def model_replaced() -> None:
    """After three steps the model is built anew (a restart from scratch): the polled parameters die mid-run."""
    model, x = _model(), torch.randn(5, 4)
    for step in range(6):
        if step == 3:
            model = _model()
        model.zero_grad()
        model(x).pow(2).mean().backward()


STORIES = [cut_after_warmup, step_in_backward_after_warmup, erased_after_warmup, accumulated, zeroed_in_place_in_turn,
           two_models_in_turn, checkpointed, backward_in_a_thread, gradients_assigned, model_replaced]


def told(story, polling: bool, monkeypatch) -> tuple[str, list[tuple], list[tuple]]:
    """The report, each watched tensor's verdict, and the findings of ``story`` traced, polling on or off."""
    monkeypatch.setattr(Polling, "on", polling)
    with trace() as traced:
        story()
    watched = [(w.name, w.got_grad) for w in traced.watched]
    findings = [(f.kind, f.tensor, f.line, f.count) for f in traced.findings]
    return traced.report(), watched, findings


@pytest.mark.parametrize("story", STORIES, ids=lambda story: story.__name__)
def test_polled_leaves_are_told_as_hooked_ones(story, monkeypatch) -> None:
    assert told(story, True, monkeypatch) == told(story, False, monkeypatch)


def test_gradients_erased_after_warmup_are_counted_at_each_step_of_polled_parameters(monkeypatch) -> None:
    _, _, findings = told(erased_after_warmup, True, monkeypatch)
    assert [(kind, count) for kind, _, _, count in findings] == [("optimizer", 3)]


def test_a_hook_of_the_script_that_clears_gradients_of_polled_parameters_leaves_their_arrival_seen(monkeypatch):
    _, _, findings = told(step_in_backward_after_warmup, True, monkeypatch)
    assert [(kind, count) for kind, _, _, count in findings] == [("optimizer", 3)]


def test_the_gradients_a_backward_gives_before_and_inside_a_reentrant_backward_are_both_seen(monkeypatch) -> None:
    _, _, findings = told(checkpointed, True, monkeypatch)  # the body's step, then the head's
    assert [(kind, count) for kind, _, _, count in findings] == [("optimizer", 3), ("optimizer", 3)]


def test_a_backward_of_another_thread_notes_the_polled_leaves_it_reaches() -> None:
    model, x = _model(), torch.randn(5, 4)
    registry = WatchRegistry()
    for param in model.parameters():
        registry.watch_leaf(param, None)
    registry.polling.joining.extend(watched.key for watched in registry.all)
    backward_starts(registry)  # the next backward of the traced thread polls them
    backward_ended(registry)
    assert len(registry.polling.polled) == 4 and not any(map(has_post_accumulate_hooks, model.parameters()))
    model[2].weight.grad = torch.zeros_like(model[2].weight)  # written into, not set anew
    model[2].bias.requires_grad_(False)
    run_elsewhere(registry, model(x).sum().backward)
    assert sorted(registry.arrived) == [0, 1, 2]


def test_polled_leaves_that_died_are_let_go() -> None:
    registry = WatchRegistry()
    leaves = [torch.randn(3, requires_grad=True) for _ in range(3)]
    for leaf in leaves:
        registry.watch_leaf(leaf, None)
    registry.polling.joining.extend(watched.key for watched in registry.all)
    backward_starts(registry)
    backward_ended(registry)
    del leaves[1]
    backward_starts(registry)
    leaves[0].sum().backward()
    backward_ended(registry)
    assert [watched.key for watched in registry.polling.polled] == [0, 2] and registry.arrived == [0]


def test_steady_parameters_carry_no_hook_and_get_theirs_back_when_the_script_adds_one() -> None:
    model, x = _model(), torch.randn(5, 4)
    with trace() as traced:
        for _ in range(3):
            model.zero_grad()
            model(x).sum().backward()
        assert not any(map(has_post_accumulate_hooks, model.parameters()))  # polled: no call per backward
        seen = []
        model[0].weight.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad is not None))
        model.zero_grad()
        model(x).sum().backward()
    assert seen == [True]
    assert all(w.got_grad for w in traced.watched) and not traced.findings


def test_polling_ends_for_good_once_torch_distributed_runs(tmp_path) -> None:
    model, x = _model(), torch.randn(5, 4)
    excepthook = sys.excepthook
    with trace() as traced:
        for _ in range(3):
            model.zero_grad()
            model(x).sum().backward()
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
        try:
            model.zero_grad()
            model(x).sum().backward()
            hooked = all(map(has_post_accumulate_hooks, model.parameters()))
        finally:
            dist.destroy_process_group()
            sys.excepthook = excepthook
        for _ in range(3):  # the group is gone: the parameters keep their hooks all the same
            model.zero_grad()
            model(x).sum().backward()
        still_hooked = all(map(has_post_accumulate_hooks, model.parameters()))
    assert hooked and still_hooked
    assert all(w.got_grad for w in traced.watched) and not traced.findings
