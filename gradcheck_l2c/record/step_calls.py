"""Where a function calls an optimizer's ``step()``, and the ``if`` around that call: the line a step that never ran
is named at (a condition that is never true)."""
from __future__ import annotations

import ast
from typing import Any

from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.param_sources import source_tree


def step_call_guard(code: Any, names: set[str]) -> tuple[Site | None, Site | None]:
    """The ``<name>.step(...)`` call on one of ``names`` (a variable or an attribute that holds the optimizer)
    in the function ``code`` runs (or at module level), and the ``if`` around it, when there is exactly one."""
    filename = code.co_filename
    tree = source_tree(filename)
    if tree is None:
        return None, None
    scope: ast.AST = tree
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if code.co_name != "<module>":
        scope = next((n for n in functions if n.name == code.co_name and code.co_firstlineno in
                      (n.lineno, *(d.lineno for d in n.decorator_list))), None)
        if scope is None:
            return None, None
    nested = {id(inner) for n in functions if n is not scope for inner in ast.walk(n) if n is not scope}
    calls = []
    for node in ast.walk(scope):
        if id(node) in nested and scope is tree:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "step" \
                and len(node.args) <= 1:
            receiver = node.func.value
            name = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", None)
            if name in names:
                calls.append(node)
    if len(calls) != 1:
        return None, None
    call = calls[0]
    guard = _innermost_guard(tree, call)
    return Site(filename, call.lineno), (Site(filename, guard.lineno) if guard is not None else None)


def _innermost_guard(tree: ast.Module, call: ast.Call) -> ast.If | None:
    """The innermost ``if`` whose body holds ``call``."""
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and any(call in ast.walk(statement) for statement in node.body):
            if found is None or node.lineno > found.lineno:
                found = node
    return found
