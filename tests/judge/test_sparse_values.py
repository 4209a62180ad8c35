"""Learnable edge weights put into a sparse COO adjacency whose values are then read with ``._values()`` (a graph
library's conversion from torch's sparse format): ``._values()`` returns them detached, so the weights get no gradient.
The finding is a ``detach`` at that read, with the ``.grad`` read as symptom; the indices read beside it are the
tensor's structure, no cut; through ``.coalesce().values()`` the weights learn silently."""
from __future__ import annotations

CODE = """
import torch
from torch import nn
torch.manual_seed(0)

edge_index = torch.tensor([[0, 1, 2, 3, 1], [1, 2, 3, 0, 3]])
edge_weight = nn.Parameter(torch.rand(5))
lin = nn.Linear(3, 3)
optimizer = torch.optim.SGD([edge_weight, *lin.parameters()], lr=0.1)
x = torch.randn(4, 3)
for step in range(2):
    adj = torch.sparse_coo_tensor(edge_index, edge_weight, (4, 4)){coalesce}
    row, col = adj.{indices}()  # <- indices
    value = adj.{values}()  # <- values
    out = torch.zeros(4, 3).index_add(0, row, value.unsqueeze(-1) * lin(x)[col])
    loss = out.pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(edge_weight.grad)  # <- read
"""


def test_values_read_detached_are_named(snippet):
    script = snippet(CODE.format(coalesce="", indices="_indices", values="_values"))
    found = [f for f in script.run().findings if f.severity in ("error", "warning")]
    assert {(f.kind, f.line) for f in found} == {("detach", script.line("values"))}
    assert all(any(r.role == "symptom" and r.line == script.line("read") for r in f.related) for f in found)
    assert ".coalesce().values()" in found[0].fix


def test_values_taken_with_their_graph_are_silent(snippet):
    script = snippet(CODE.format(coalesce=".coalesce()", indices="indices", values="values"))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
