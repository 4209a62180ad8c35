"""A ``detach`` or ``.data`` read in user code of a weight whose gradient already arrived takes a shortcut past the
cut's look (`handlers._cuts_nothing_new`): what the trace finds must be what the full look finds, in a loop that
flattens and reloads its weights every round (the L2C's pattern), and where a detach does cut a weight."""
from __future__ import annotations

import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.record import handlers


def rounds_of_flatten_and_reload(cut_head: bool) -> None:
    """Each round: load a flat row into the model, train it a few steps, flatten it back with ``detach``. With
    ``cut_head`` the head is fed a detached copy of a weight that never got a gradient: a real cut."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    head = nn.Parameter(torch.ones(1))
    optimizer = torch.optim.SGD([*model.parameters(), head], lr=0.05)
    x, y = torch.randn(16, 4), torch.randn(16, 1)
    rows = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).repeat(3, 1)
    for step in range(12):
        k = step % 3
        with torch.no_grad():
            for p, value in zip(model.parameters(), rows[k].split([p.numel() for p in model.parameters()])):
                p.copy_(value.view_as(p))
        for _ in range(2):
            optimizer.zero_grad()
            scale = head.detach() if cut_head else head
            nn.functional.mse_loss(model(x) * scale, y).backward()
            optimizer.step()
        rows[k] = torch.cat([p.data.reshape(-1) for p in model.parameters()])


def report(cut_head: bool) -> list[str]:
    with trace() as traced:
        rounds_of_flatten_and_reload(cut_head)
    return sorted(f"{f.tensor} {f.kind} {f.file}:{f.line} {f.count} {f.message} {f.related}" for f in traced.findings)


def test_the_shortcut_finds_what_the_full_look_finds(monkeypatch) -> None:
    taken = []
    shortcut = handlers._cuts_nothing_new
    monkeypatch.setattr(handlers, "_cuts_nothing_new", lambda state, tensor: taken.append(1) or shortcut(state, tensor))
    with_shortcut = [report(False), report(True)]
    assert len(taken) > 20  # the flatten and the head's detach at every step
    monkeypatch.setattr(handlers, "_cuts_nothing_new", lambda state, tensor: False)
    assert [report(False), report(True)] == with_shortcut


def test_a_detached_weight_that_never_learns_is_still_reported_at_its_line() -> None:
    findings = report(True)
    assert not report(False)
    assert any("head" in line and "test_detach_shortcut.py:29 " in line for line in findings), findings
