"""A module keeps two states across truncated-BPTT windows, and the script detaches one of them in place between
windows (``self.mem.detach_()`` in a ``detach_hidden()``) but not the other: the next window's backward reaches the
other's freed graph. The `autograd_error` is named at the in-place detach of the first, which is where the second
belongs; a state the script never detaches anywhere stays named where it is set."""
from __future__ import annotations

CODE = """
import torch
from torch import nn

torch.manual_seed(0)


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(3, 4)
        self.rec = nn.Linear(4, 4)
        self.mem = torch.zeros(2, 4)
        self.spk = torch.zeros(2, 4)

    def forward(self, x):
        self.mem = 0.9 * self.mem + self.inp(x) + self.rec(self.spk)
        self.spk = torch.sigmoid(self.mem)  # <- set
        return self.spk

    def detach_hidden(self):
        {first}  # <- detach
        {more}


cell = Cell()
opt = torch.optim.SGD(cell.parameters(), lr=0.1)
for window in range(3):
    cell.detach_hidden()
    out = sum(cell(torch.randn(2, 3)) for _ in range(2))
    loss = out.pow(2).mean()
    opt.zero_grad()
    try:
        loss.backward()  # <- backward
    except RuntimeError as error:
        print("refused:", error)
        break
    opt.step()
"""


def errors(snippet, more: str, first: str = "self.mem.detach_()"):
    script = snippet(CODE.format(first=first, more=more))
    return script, [f for f in script.run().findings if f.severity == "error"]


def test_the_state_left_out_of_the_in_place_detaches_is_named_where_the_others_are_detached(snippet):
    script, found = errors(snippet, "pass")
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("detach"))]
    assert "`spk`, kept on the module" in found[0].message and "`mem`, kept beside it" in found[0].message
    assert "detach `spk` here too" in found[0].fix


def test_detaching_every_state_is_silent(snippet):
    assert errors(snippet, "self.spk.detach_()")[1] == []


def test_states_never_detached_in_place_are_named_where_they_are_set(snippet):
    script, found = errors(snippet, "pass", first="pass")
    assert [f.kind for f in found] == ["autograd_error"] and found[0].line != script.line("detach")
    assert "kept beside it" not in found[0].message
