"""A custom Function's backward that hands out None for an input because it tests ``saved.requires_grad``: a tensor
made in forward (which runs with gradients off: a reshape's copy, a cast) never requires grad, whatever its input
did, so the gradient is skipped. Read from the backward's syntax: the name it returns at the input's position, bound
to None unless a ``.requires_grad`` test holds."""
from __future__ import annotations

import ast
import os
from typing import Any

import torch

from gradcheck_l2c.record.locations import USER, Site, frame_kind
from gradcheck_l2c.record.param_sources import function_node

#: node metadata: the positions of a custom Function's tensor arguments among all of ``apply``'s (its node's edges
#: follow them in order; other arguments have none)
TENSOR_ARGS = "gradcheck_tensor_args"
#: the line that leaves an input's gradient None on a ``.requires_grad`` test, the tensor tested, the input's position
Gate = tuple[Site, str, int]


def note_tensor_args(out: Any, args: tuple) -> None:
    """A custom Function's ``apply`` returned ``out``: note on its node where its tensor arguments stand."""
    first = out if isinstance(out, torch.Tensor) else next((o for o in out if isinstance(o, torch.Tensor)), None) \
        if isinstance(out, tuple) else None
    node = first.grad_fn if first is not None else None
    if node is not None:
        node.metadata[TENSOR_ARGS] = tuple(i for i, arg in enumerate(args) if isinstance(arg, torch.Tensor))


def gate_site(cls: Any, node: Any, edge: int) -> Gate | None:
    """For the input of ``cls``'s node (``node``) reached through its ``edge``-th edge: the line of its backward that
    binds the returned gradient to None unless a ``.requires_grad`` holds, the tensor tested, and the input's
    position."""
    positions = node.metadata.get(TENSOR_ARGS) if hasattr(node, "metadata") else None
    position = positions[edge] if positions is not None and edge < len(positions) else edge
    backward = cls.backward
    code = getattr(getattr(backward, "__func__", backward), "__code__", None)
    if code is None or frame_kind(code.co_filename) != USER:
        return None
    function = function_node(code)
    returns = [r for r in ast.walk(function) if isinstance(r, ast.Return) and r.value is not None] if function else []
    if not returns:
        return None
    value = max(returns, key=lambda r: r.lineno).value
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    if position >= len(items) or not isinstance(items[position], ast.Name):
        return None
    found = _gate(function, items[position].id)
    return (Site(os.path.abspath(code.co_filename), found[0]), found[1], position) if found else None


def _gate(function: ast.AST, name: str) -> tuple[int, str] | None:
    """The first binding of ``name`` that leaves it None unless a ``.requires_grad`` test holds: ``g = ... if
    t.requires_grad else None``, or an ``if t.requires_grad:`` that binds it (after ``g = None``)."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and _binds(node, name) and isinstance(node.value, ast.IfExp) \
                and (_is_none(node.value.body) or _is_none(node.value.orelse)):
            tested = _tested(node.value.test)
            if tested is not None:
                return node.lineno, tested
        elif isinstance(node, ast.If) and any(_binds(s, name) for s in node.body if isinstance(s, ast.Assign)):
            tested = _tested(node.test)
            if tested is not None:
                return node.lineno, tested
    return None


def _binds(assign: ast.Assign, name: str) -> bool:
    return any(isinstance(target, ast.Name) and target.id == name for target in assign.targets)


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _tested(test: ast.AST) -> str | None:
    """The tensor whose ``.requires_grad`` the test reads (``h.requires_grad``, ``not x.requires_grad``), as
    written."""
    for node in ast.walk(test):
        if isinstance(node, ast.Attribute) and node.attr == "requires_grad":
            return ast.unparse(node.value)
    return None
