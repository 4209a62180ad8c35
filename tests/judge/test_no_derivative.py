"""A backward that reaches an op PyTorch has no derivative for (``derivative for aten::_coalesced_ is not
implemented``: PyG's ``to_torch_coo_tensor`` marked its sparse adjacency coalesced with ``_coalesced_(True)``) is
named at the line that made that op's value, where autograd put its ``NotImplemented`` node; the backward that raised
is the symptom. Built with the keyword that does the same (``is_coalesced=True``), the values learn and all is quiet."""
from __future__ import annotations

import torch

UNDERIVED = """
import torch
torch.manual_seed(0)


def adjacency(edge_index, edge_weight, size):
    adj = torch.sparse_coo_tensor(edge_index, edge_weight, (size, size))
    return adj._coalesced_(True)  # <- underived


edge_index = torch.tensor([[0, 1, 2], [1, 2, 0]])
edge_weight = torch.rand(3, requires_grad=True)
features = torch.randn(3, 4)
out = torch.sparse.mm(adjacency(edge_index, edge_weight * 2, 3), features)
out.pow(2).sum().backward()  # <- backward
"""
DIFFERENTIABLE = UNDERIVED.replace("""    adj = torch.sparse_coo_tensor(edge_index, edge_weight, (size, size))
    return adj._coalesced_(True)  # <- underived""", """    return torch.sparse_coo_tensor(edge_index, edge_weight, (size, size), is_coalesced=True)""")


def test_the_line_that_made_the_op_without_derivative_is_named(snippet):
    script = snippet(UNDERIVED)
    t = script.raising(RuntimeError, "derivative for")
    found = [f for f in t.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.severity, f.line) for f in found] == [("autograd_error", "error", script.line("underived"))]
    assert [(r.role, r.line) for r in found[0].related] == [("symptom", script.line("backward"))]
    assert "`aten::_coalesced_`, made on this line, has no derivative" in found[0].message


def test_the_error_itself_says_which_line_to_change(snippet):
    script = snippet(UNDERIVED)
    try:
        script.run()
    except RuntimeError as error:
        notes = "\n".join(getattr(error, "__notes__", ()))
    assert f"{script.path.name}:{script.line('underived')}: `aten::_coalesced_`" in notes


def test_the_same_value_built_with_a_differentiable_op_is_quiet(snippet):
    t = snippet(DIFFERENTIABLE).run()
    assert [f for f in t.findings if f.severity in ("error", "warning")] == []
    assert torch.is_grad_enabled()
