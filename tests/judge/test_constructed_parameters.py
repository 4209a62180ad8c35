"""A Parameter made in a module's ``__init__`` that no module registers (kept in another object, or held only
through a copy such as ``.double()``'s result) gets gradients and no optimizer sees it: named where it is made."""
from __future__ import annotations

import textwrap

PRELUDE = """
import types
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(8, 4), torch.randn(8, 1)
"""

TRAIN = """
model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def loud(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code) + TRAIN)
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_parameter_kept_in_a_plain_object_is_named_where_it_is_made(snippet):
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.extras = types.SimpleNamespace(gain=nn.Parameter(torch.ones(1)))  # <- made

    def forward(self, h):
        return self.fc(h) * self.extras.gain
""")
    assert [(f.kind, f.line, f.tensor) for f in found] == [
        ("non_parameter_tensor", script.line("made"), "Net.extras.gain")]


def test_a_parameter_held_only_through_its_converted_copy_is_named_where_it_is_made(snippet):
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        self.shift = nn.Parameter(torch.zeros(1, dtype=torch.float64)).float()  # <- made

    def forward(self, h):
        return self.fc(h) + self.shift
""")
    assert [(f.kind, f.line, f.tensor) for f in found] == [
        ("non_parameter_tensor", script.line("made"), "Net.shift")]
    assert "nn.Parameter(t.to(device))" in found[0].fix


def test_a_parameter_made_in_init_and_then_registered_is_silent(snippet):
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)
        gain = nn.Parameter(torch.ones(1))
        self.lookup = {"gain": gain}
        self.register_parameter("gain", gain)

    def forward(self, h):
        return self.fc(h) * self.lookup["gain"]
""")
    assert found == []


def test_a_frozen_parameter_made_in_forward_from_a_layer_s_output_runs_and_is_named(snippet):
    # VO-Transformer's action token: `nn.Parameter(self.embed(a), requires_grad=False)` at every forward; the trace
    # raised AttributeError there (an unwatched Parameter looked up as watched), and a Parameter set on the module
    # in its own forward was told as the module "constructed inside" its own forward
    script, found = loud(snippet, """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.fc = nn.Linear(4, 4), nn.Linear(4, 1)

    def forward(self, h):
        self.token = nn.Parameter(self.embed(h), requires_grad=False)  # <- wrapped
        return self.fc(h + self.token)
""")
    assert {(f.kind, f.line) for f in found} == {("new_parameter", script.line("wrapped"))}  # no layer was built here
