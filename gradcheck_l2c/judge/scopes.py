"""The user's source, read by the judge: a file's syntax tree (parsed once per text) and the function a line
belongs to, for placing findings by where lines stand in the code."""
from __future__ import annotations

import ast
import functools
import linecache

from gradcheck_l2c.record.facts import Site

Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Module


@functools.lru_cache(maxsize=16)
def parse(source: str) -> ast.Module | None:
    """Parsed once per file text (keyed by the text, so an edited file is parsed again)."""
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def innermost_scope(tree: ast.Module, line: int) -> Scope:
    """The innermost function around ``line``, or the module."""
    scope: Scope = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.lineno <= line <= (node.end_lineno or node.lineno) \
                and (isinstance(scope, ast.Module) or node.lineno > scope.lineno):
            scope = node
    return scope


def follows_in_scope(first: Site, later: Site) -> bool:
    """Whether ``later`` is a line below ``first`` in the same function (or both at module level) of one file."""
    if first.file != later.file or later.line <= first.line:
        return False
    tree = parse("".join(linecache.getlines(first.file)))
    return tree is not None and innermost_scope(tree, first.line) is innermost_scope(tree, later.line)


def next_statement(site: Site) -> Site | None:
    """The statement right below the one that starts at ``site``, in the same block (a backward's line, and the
    ``step()`` meant to follow it); None at a block's end or where the source cannot be read."""
    tree = parse("".join(linecache.getlines(site.file)))
    if tree is None:
        return None
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for statement, after in zip(block, block[1:]):
                if isinstance(statement, ast.stmt) and statement.lineno == site.line:
                    return Site(site.file, after.lineno)
    return None
