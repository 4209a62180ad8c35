"""``load_state_dict`` given the module's own state (``target.load_state_dict(target.state_dict())``, meant to sync a
target network from the one that trains) copies every tensor onto itself: nothing changes, and the target keeps its
first values. A `no_update` warning at that line, naming the module. Loading another module's state, or the module's
own state with entries replaced from elsewhere (a partial restore), is silent."""
from __future__ import annotations

import pytest

CODE = """
import torch
from torch import nn

torch.manual_seed(0)
online = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
target = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
opt = torch.optim.SGD(online.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(4):
    with torch.no_grad():
        goal = y + 0.9 * target(x)
    loss = ((online(x) - goal) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 2 == 1:
        {sync}  # <- sync
"""


def warnings(snippet, sync: str):
    script = snippet(CODE.format(sync=sync))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_target_synced_from_itself_is_named_at_the_load(snippet):
    script, found = warnings(snippet, "target.load_state_dict(target.state_dict())")
    assert [(f.kind, f.line, f.tensor) for f in found] == [("no_update", script.line("sync"), "target")]
    assert "its 6 parameters are copied onto themselves" in found[0].message
    assert "source.state_dict()" in found[0].fix


@pytest.mark.parametrize("sync", [
    "target.load_state_dict(online.state_dict())",
    "state = target.state_dict(); state['2.weight'] = online[2].weight.detach().clone(); target.load_state_dict(state)",
])
def test_loading_another_modules_state_or_a_partly_new_one_is_silent(snippet, sync):
    assert warnings(snippet, sync)[1] == []
