"""Fixes for the calls that take a tensor off its graph on the gradient's path: ``.detach()`` and ``.data``
are dropped, leaving the tensor itself."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.fix.source import SourceFile, method_call
from gradcheck_l2c.fix.transform import Change, Unfixable
from gradcheck_l2c.records import Finding


def drop_detach(source: SourceFile, findings: list[Finding]) -> Change:
    """``x.detach()`` on the line → ``x``: the finding says the loss of that step needed the gradient."""
    import libcst as cst

    calls = source.on_line(cst.Call, findings[0].line, lambda node: method_call(node, "detach"))
    if not calls:
        raise Unfixable("no .detach() call starts on this line")
    change = Change("drop .detach()")
    for call in calls:
        change.rewrite(call, lambda node: node.func.value)
    return change


def drop_data(source: SourceFile, findings: list[Finding]) -> Change:
    """``x.data`` read on the line → ``x``; assigning ``x.data = ...`` stays words (what to write instead
    depends on what the assignment meant)."""
    import libcst as cst

    def read(node: Any) -> bool:
        parent = source.parent(node)
        return node.attr.value == "data" and not isinstance(parent, (cst.AssignTarget, cst.AugAssign))

    reads = source.on_line(cst.Attribute, findings[0].line, read)
    if not reads:
        raise Unfixable("no .data read starts on this line (an assignment to .data needs a decision)")
    change = Change("use the tensor itself, not .data")
    for node in reads:
        change.rewrite(node, lambda updated: updated.value)
    return change
