"""Where a ``backward()`` that never ran is kept from running: in a run without any backward, the step's function
holds a ``<loss>.backward()`` call inside an ``if``/``else`` branch the run never took (gradient accumulation that
backpropagates only when accumulating is off), and the branch's line is the one to change."""
from __future__ import annotations

import ast
import linecache

from gradcheck_l2c.judge.scopes import innermost_scope, parse
from gradcheck_l2c.record.facts import Site


def branch_around_backward(step: Site | None) -> tuple[Site, Site] | None:
    """For the function of the ``step()`` line, its one ``.backward()`` call inside a branch: the branch's line (the
    ``if``, or the ``else:`` when the call is in the ``else`` part) and the call's; None if there is not exactly one
    such call, or it stands outside any branch."""
    if step is None:
        return None
    lines = linecache.getlines(step.file)
    tree = parse("".join(lines))
    if tree is None:
        return None
    scope = innermost_scope(tree, step.line)
    calls = [node for node in ast.walk(scope) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == "backward" and innermost_scope(tree, node.lineno) is scope]
    if len(calls) != 1:
        return None
    call = calls[0]
    for branch in (node for node in ast.walk(scope) if isinstance(node, ast.If)):
        if _holds(branch.body, call):
            return Site(step.file, branch.lineno), Site(step.file, call.lineno)
        if _holds(branch.orelse, call):
            first = branch.orelse[0].lineno
            else_line = next((n for n in range(first - 1, branch.lineno, -1)
                              if lines[n - 1].strip().startswith("else")), None)
            if else_line is not None:  # an ``elif`` is an ``if`` of its own, found in the walk
                return Site(step.file, else_line), Site(step.file, call.lineno)
    return None


def _holds(statements: list[ast.stmt], call: ast.Call) -> bool:
    """Whether ``call`` sits directly in one of ``statements`` (not in a nested branch of theirs)."""
    return any(isinstance(s, ast.Expr) and s.value is call for s in statements)
