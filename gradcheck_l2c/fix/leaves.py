"""The fix for a ``.grad`` read on a non-leaf (``non_leaf_watched``): the tensor the name ends up holding is
made the leaf. ``x = torch.randn(3, requires_grad=True).to(dev)`` becomes
``x = torch.randn(3).to(dev).requires_grad_()``; ``w = F.normalize(w)`` after ``w = torch.randn(...,
requires_grad=True)`` in the same block moves the ``requires_grad`` to the rebinding."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.fix.source import SourceFile, dotted_name, keyword, parenthesized, without_keyword
from gradcheck_l2c.fix.transform import Change, Unfixable
from gradcheck_l2c.records import Finding


def make_leaf(source: SourceFile, findings: list[Finding]) -> Change:
    import libcst as cst

    name = findings[0].tensor
    assigns = source.on_line(cst.Assign, findings[0].line, lambda node: len(node.targets) == 1 and isinstance(
        node.targets[0].target, cst.Name) and node.targets[0].target.value == name)
    if len(assigns) != 1:
        raise Unfixable(f"no assignment to {name} on this line")
    assign = assigns[0]
    inner = [call for call in source.nodes(cst.Call) if call is not assign.value and _requires_grad(call)
             and source.within(call, assign)]
    if len(inner) == 1:
        origin = inner[0]
        summary = "create the tensor as it is used and make that the leaf: .requires_grad_() at the end"
    else:
        origin = _earlier_leaf(source, assign, name)
        summary = f"make the rebound {name} the leaf: requires_grad moves from line {source.start(origin)[0]} here"
    change = Change(summary)
    change.rewrite(origin, _not_a_leaf)
    change.rewrite(assign.value, lambda node: cst.Call(cst.Attribute(parenthesized(node), cst.Name("requires_grad_"))))
    return change


def _not_a_leaf(call: Any) -> Any:
    """The factory call without ``requires_grad=True``; ``nn.Parameter(t, ...)`` as ``t``."""
    if dotted_name(call.func).endswith("Parameter"):
        return call.args[0].value
    return without_keyword(call, "requires_grad")


def _requires_grad(call: Any) -> bool:
    """``factory(..., requires_grad=True)``; not ``nn.Parameter(...)``, which requires grad whatever it is told."""
    import libcst as cst

    argument = keyword(call, "requires_grad")
    return (argument is not None and isinstance(argument.value, cst.Name) and argument.value.value == "True"
            and not dotted_name(call.func).endswith("Parameter"))


def _earlier_leaf(source: SourceFile, assign: Any, name: str) -> Any:
    """The ``name = factory(..., requires_grad=True)`` before ``assign`` in the same block."""
    import libcst as cst

    block = source.enclosing(assign, (cst.IndentedBlock, cst.Module))
    line = source.start(assign)[0]
    earlier = [node for node in source.nodes(cst.Assign) if source.start(node)[0] < line and len(node.targets) == 1
               and isinstance(node.targets[0].target, cst.Name) and node.targets[0].target.value == name
               and source.enclosing(node, (cst.IndentedBlock, cst.Module)) is block]
    value = earlier[-1].value if earlier else None
    if isinstance(value, cst.Call) and dotted_name(value.func).endswith("Parameter") and value.args:
        return value  # nn.Parameter(t): the rebinding becomes the leaf, t stays a plain tensor
    if not isinstance(value, cst.Call) or not _requires_grad(value):
        raise Unfixable(f"no {name} = ...(requires_grad=True) earlier in the same block to move requires_grad from")
    return value

