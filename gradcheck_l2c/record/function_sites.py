"""Where a custom ``autograd.Function`` behind one of autograd's errors is written: the ``return`` of a backward that
gave the wrong gradients, the ``class`` line of one without backward, the ``return`` of a forward that handed out a
view later written in place."""
from __future__ import annotations

import ast
import os
import re
from typing import Any

import torch

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.code_lines import return_lines
from gradcheck_l2c.record.gradient_gates import Gate, gate_site
from gradcheck_l2c.record.locations import USER, Site, frame_kind
from gradcheck_l2c.record.param_sources import first_return, source_tree
from gradcheck_l2c.record.torch_internals import function_class

Tensor = torch.Tensor
_FUNCTION = re.compile(r"[Ff]unction (\w+) returned")
_COUNTS = re.compile(r"expected (\d+), got (\d+)")


def view_return_site(tensor: Tensor) -> Site | None:
    """The ``return`` line of the user's custom Function whose forward made ``tensor`` (a view of its input)."""
    forward = getattr(function_class(tensor.grad_fn), "forward", None)
    return first_return(forward) if forward is not None else None


def function_backward_site(text: str, roots: list[Tensor]) -> tuple[Site | None, dict[str, Any]]:
    """The custom Function whose backward returned the wrong gradients, and the line of its ``return``."""
    match = _FUNCTION.search(text)
    counts = _COUNTS.search(text)
    detail: dict[str, Any] = {"node": match[1] if match else None}
    if counts:
        detail["expected"], detail["got"] = int(counts[1]), int(counts[2])
    if match is None:
        return None, detail
    for node in graph.iter_nodes(graph.grad_roots(roots), graph.SAFE_WALK):
        cls = function_class(node)
        if cls is None or type(node).__name__ != match[1]:
            continue
        detail["function"] = cls.__name__
        code = _backward_code(cls)
        if code is None:
            return None, detail
        lines = return_lines(code)
        file = os.path.abspath(code.co_filename)
        detail["returns"] = len(lines)
        return (Site(file, lines[-1]) if lines else Site(file, code.co_firstlineno)), detail
    return None, detail


def user_backward_return(cls: Any) -> Site | None:
    """The last ``return`` of the backward of ``cls``, a custom Function written in user code: where it hands out
    each input's gradient (a ``None`` there leaves that input without one); None for a library's Function."""
    code = _backward_code(cls)
    if code is None or frame_kind(code.co_filename) != USER:
        return None
    lines = return_lines(code)
    return Site(os.path.abspath(code.co_filename), lines[-1] if lines else code.co_firstlineno)


def functions_before(roots: list[Any], keys: set[int], key_of: Any) -> dict[int, tuple[str, Site | None, Gate | None]]:
    """For the watched leaves ``keys`` (autograd nodes ``roots`` reach them) that every path from the roots reaches
    through a user's custom Function: the one nearest them, as (its node's name, the ``return`` of its backward, the
    line that left the leaf's input without gradient on a ``.requires_grad`` test, `gradient_gates`). A backward gave
    them no gradient, and a user's backward is what can hand out None on the way (torch's own ops between it and the
    leaf pass a gradient on)."""
    def user_function(node: Any) -> bool:
        cls = function_class(node)
        return cls is not None and user_backward_return(cls) is not None

    found: dict[int, tuple[str, Site | None, Gate | None]] = {}
    behind: list[Any] = [None]  # None for the roots, then each user Function met: walked past in turn, outermost first
    met: set[Any] = set()
    for barrier in behind:  # the list grows as the walks meet Functions further in
        starts = roots if barrier is None else [child for child, _ in barrier.next_functions]
        for node in graph.iter_nodes(starts, graph.SAFE_WALK, expand=lambda n: not user_function(n)):
            if user_function(node) and node not in met:
                met.add(node)
                behind.append(node)
            key = key_of(node.variable) if hasattr(node, "variable") else None
            if key in keys:
                keys = keys - {key}  # reached on a path without a Function, or past no nearer one
                if barrier is not None:
                    cls = function_class(barrier)
                    edge = _edge_to(barrier, node)
                    found[key] = (type(barrier).__name__, user_backward_return(cls),
                                  gate_site(cls, barrier, edge) if edge is not None else None)
        if not keys:
            break
    return found


def _edge_to(function: Any, leaf: Any) -> int | None:
    """Which of a Function node's edges leads to ``leaf`` (its first, walking each in turn)."""
    for index, (child, _) in enumerate(function.next_functions):
        if child is not None and any(node is leaf for node in graph.iter_nodes([child], graph.SAFE_WALK)):
            return index
    return None


def _backward_code(cls: Any) -> Any:
    """The code of the backward (or ``vjp``) a custom Function ``cls`` defines, or None."""
    backward = cls.vjp if cls.vjp is not torch.autograd.Function.vjp else cls.backward
    return getattr(getattr(backward, "__func__", backward), "__code__", None)


def missing_backward_site(roots: list[Tensor]) -> tuple[Site | None, dict[str, Any]]:
    """The custom Function on the graph that defines neither ``backward`` nor ``vjp``: its class line."""
    base = torch.autograd.Function
    for node in graph.iter_nodes(graph.grad_roots(roots), graph.SAFE_WALK):
        cls = function_class(node)
        if cls is None or cls.backward is not base.backward or cls.vjp is not base.vjp:
            continue
        detail = {"function": cls.__name__}
        code = getattr(getattr(cls.forward, "__func__", cls.forward), "__code__", None)
        if code is None or frame_kind(code.co_filename) != USER:
            return None, detail
        return Site(os.path.abspath(code.co_filename), _class_line(code, cls.__name__)), detail
    return None, {}


def _class_line(code: Any, name: str) -> int:
    """The ``class`` line of the class whose method ``code`` is (its own line when the file cannot be read)."""
    tree = source_tree(code.co_filename)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.name == name \
                and node.lineno <= code.co_firstlineno <= (node.end_lineno or node.lineno):
            return node.lineno
    return code.co_firstlineno
