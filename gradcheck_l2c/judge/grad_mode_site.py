"""Where gradients were turned off around a user line that ran under no_grad: the enclosing
``with torch.no_grad():`` (``inference_mode``, ``set_grad_enabled(False)``) block, an ``@torch.no_grad()``
decorator on the line's function, or a ``torch.set_grad_enabled(False)`` call before it.

The run only knows that grad mode was off; this finds the statement that turned it off in the file's
syntax tree, within the line's own function. A caller's block is not guessed at.
"""
from __future__ import annotations

import ast
import functools
import linecache
from dataclasses import dataclass

from gradcheck_l2c.judge.scopes import Scope, innermost_scope, parse
from gradcheck_l2c.record.facts import Site

_OFF = frozenset(("no_grad", "inference_mode", "set_grad_enabled"))
_MODES = _OFF | {"enable_grad"}


@dataclass(frozen=True)
class GradOff:
    """The statement that turned gradients off: where, its text, and its form (``with``, ``decorator``, ``call``);
    for a call, whether a later plain ``set_grad_enabled`` call of the same function turns them back on after the
    line (the two bracket it, as a ``with`` block would)."""

    site: Site
    statement: str
    form: str
    turned_back_on: bool = False


def grad_disabled_at(site: Site | None) -> GradOff | None:
    """The statement in ``site``'s function that turned gradients off for it, or None when not visible there."""
    if site is None:
        return None
    source = "".join(linecache.getlines(site.file))
    return _lookup(site.file, source, site.line) if source else None


@functools.lru_cache(maxsize=64)
def _lookup(file: str, source: str, line: int) -> GradOff | None:
    """Looked up once per line of a file's text (several tensors share one finding site)."""
    tree = parse(source)
    if tree is None:
        return None
    site = Site(file, line)
    scope = innermost_scope(tree, site.line)
    blocks = [node for node in _own_nodes(scope) if isinstance(node, (ast.With, ast.AsyncWith))
              and node.lineno <= site.line <= (node.end_lineno or node.lineno)
              and any(_mode(item.context_expr) for item in node.items)]
    if blocks:
        innermost = max(blocks, key=lambda node: node.lineno)
        call = next(item.context_expr for item in innermost.items if _mode(item.context_expr))
        if not _turns_off(call):
            return None
        keyword = "async with" if isinstance(innermost, ast.AsyncWith) else "with"
        return GradOff(Site(site.file, innermost.lineno), f"{keyword} {ast.unparse(call)}:", "with")
    if not isinstance(scope, ast.Module):
        for decorator in scope.decorator_list:
            if _mode(decorator) in ("no_grad", "inference_mode") and _turns_off(decorator):
                return GradOff(Site(site.file, decorator.lineno), f"@{ast.unparse(decorator)}", "decorator")
    calls = [node for node in _own_nodes(scope) if isinstance(node, ast.Expr)
             and isinstance(node.value, ast.Call) and _mode(node.value) == "set_grad_enabled"]
    before = [node for node in calls if node.lineno < site.line]
    if before:
        last = max(before, key=lambda node: node.lineno)
        if _turns_off(last.value):
            on = any(node.lineno > site.line and not _turns_off(node.value) for node in calls)
            return GradOff(Site(site.file, last.lineno), ast.unparse(last.value), "call", on)
    return None


def _own_nodes(scope: Scope) -> list[ast.AST]:
    """The nodes of ``scope``'s body, not those of functions and classes defined inside it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(scope.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _mode(node: ast.expr) -> str | None:
    """``no_grad``, ``inference_mode``, ``set_grad_enabled`` or ``enable_grad`` when ``node`` names one
    (``torch.no_grad()``, ``no_grad``, ``torch.autograd.no_grad()``)."""
    func = node.func if isinstance(node, ast.Call) else node
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name if name in _MODES else None


def _turns_off(node: ast.expr) -> bool:
    """Whether this grad-mode expression disables gradients. ``set_grad_enabled(flag)`` with a flag only
    known at run time counts: the run saw gradients off."""
    mode = _mode(node)
    if mode not in _OFF:
        return False
    args = node.args if isinstance(node, ast.Call) else []
    keywords = {k.arg: k.value for k in node.keywords} if isinstance(node, ast.Call) else {}
    flag = args[0] if args else keywords.get("mode")
    if mode == "no_grad" or flag is None:
        return mode != "set_grad_enabled"
    if not isinstance(flag, ast.Constant):
        return True
    return (flag.value is False) if mode == "set_grad_enabled" else bool(flag.value)
