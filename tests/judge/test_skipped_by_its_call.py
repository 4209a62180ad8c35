"""A submodule that learns in the other modules of its class but never runs in one of them, because that module's
call leaves out what the others' give (``final_block(x)`` where the other blocks get ``block(x, t)``, and the
block runs its ``time_mlp`` only given ``t``): the `unused_parameter` error is named at that call, another call as
`used`. Where no module of the class runs it, or the one that does is built with other layers, it stays named at its
definition."""
from __future__ import annotations

CODE = """
import torch
from torch import nn

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim, extra=False):
        super().__init__()
        self.time_mlp = nn.Linear(4, dim)  # <- defined
        self.proj = nn.Linear(dim, dim)
        self.extra = nn.Linear(dim, dim) if extra else None

    def forward(self, x, t=None):
        if t is not None:
            x = x + self.time_mlp(t)
        if self.extra is not None:
            x = self.extra(x)
        return self.proj(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = Block(8, extra={extra})
        self.second = Block(8)

    def forward(self, x, t):
        x = self.first({first})  # <- first
        return self.second({second})  # <- second


net = Net()
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for _ in range(2):
    loss = net(torch.randn(5, 8), torch.randn(5, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


def errors(snippet, first: str, second: str, extra: bool = False):
    script = snippet(CODE.format(first=first, second=second, extra=extra))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_the_call_that_leaves_out_what_the_others_give_is_named(snippet):
    script, found = errors(snippet, "x, t", "x")
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("second"))}
    assert {f.tensor for f in found} == {"Net.second.time_mlp.weight", "Net.second.time_mlp.bias"}
    assert "`time_mlp` learns in the other Block modules" in found[0].message
    assert ("used", script.line("first")) in {(p.role, p.line) for p in found[0].related}


def test_a_part_no_module_of_the_class_runs_stays_named_at_its_definition(snippet):
    script, found = errors(snippet, "x", "x")
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("defined"))}


def test_a_module_built_otherwise_is_no_sibling_to_compare_with(snippet):
    """The first block has a layer the second lacks: built for another use, its calls say nothing of the second's."""
    script, found = errors(snippet, "x, t", "x", extra=True)
    assert {(f.kind, f.line) for f in found} == {("unused_parameter", script.line("defined"))}


def test_every_call_giving_it_is_silent(snippet):
    assert errors(snippet, "x, t", "x, t")[1] == []
