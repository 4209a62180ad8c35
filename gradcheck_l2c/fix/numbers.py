"""Fixes for values that left autograd as Python numbers (``item``) and came back as new tensors
(``tensor_rewrap``): keep the tensor, and combine tensors with ``torch.stack`` instead of rebuilding them."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.fix.source import SourceFile, dotted_name, keyword, method_call, parenthesized
from gradcheck_l2c.fix.transform import Change, Unfixable
from gradcheck_l2c.records import Finding


def keep_tensor(source: SourceFile, findings: list[Finding]) -> Change:
    """``x.item()`` / ``float(x)`` on the line → ``x``; a call inside an f-string or ``print`` stays (logging)."""
    import libcst as cst

    def number_call(node: Any) -> bool:
        if _logging(source, node):
            return False
        if method_call(node, "item"):
            return True
        return (isinstance(node.func, cst.Name) and node.func.value == "float" and len(node.args) == 1
                and node.args[0].keyword is None and node.args[0].star == "")

    calls = source.on_line(cst.Call, findings[0].line, number_call)
    if not calls:
        raise Unfixable("no .item() or float() call starts on this line")
    change = Change("keep the tensor: drop " + ", ".join(
        ".item()" if method_call(call, "item") else "float()" for call in calls))
    for call in calls:
        change.rewrite(call, _kept)
    return change


def stack_or_itself(source: SourceFile, findings: list[Finding]) -> Change:
    """``torch.tensor([a, b])`` → ``torch.stack([a, b])``; ``torch.tensor(x)`` → ``x`` (``dtype``/``device``
    kept through ``.to``)."""
    import libcst as cst

    torch = source.module_alias("torch")
    names = {f"{torch}.tensor", f"{torch}.as_tensor"} if torch else set()

    def rebuilt(node: Any) -> bool:
        positional = [arg for arg in node.args if arg.keyword is None]
        return dotted_name(node.func) in names and len(positional) == 1 and positional[0].star == ""

    calls = source.on_line(cst.Call, findings[0].line, rebuilt, findings[0].column)
    if not calls:
        raise Unfixable("no torch.tensor(...) or torch.as_tensor(...) of one value starts on this line")
    if len(calls) > 1:
        raise Unfixable("several torch.tensor(...) calls on this line; which one rebuilds the tensor is unclear")
    call = calls[0]
    value = next(arg.value for arg in call.args if arg.keyword is None)
    combines = isinstance(value, (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp))
    moves = [arg for arg in (keyword(call, "dtype"), keyword(call, "device")) if arg is not None]

    def rewrite(node: Any) -> Any:
        inner = next(arg.value for arg in node.args if arg.keyword is None)
        if combines:
            result = node.with_changes(func=cst.Attribute(cst.Name(torch), cst.Name("stack")),
                                       args=[cst.Arg(inner)])
        else:
            result = parenthesized(inner) if moves else inner
        if moves:
            result = cst.Call(cst.Attribute(result, cst.Name("to")), _commas(moves))
        return parenthesized(result) if not combines and not moves and _needs_parens(source, call) else result

    change = Change("combine the tensors with torch.stack" if combines else "use the tensor itself")
    change.rewrite(call, rewrite)
    return change


def _commas(arguments: list[Any]) -> list[Any]:
    """The arguments separated by ``, `` and without a trailing comma."""
    import libcst as cst

    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return [arg.with_changes(comma=comma) for arg in arguments[:-1]] + [
        arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in arguments[-1:]]


def _kept(call: Any) -> Any:
    """``x.item()`` → ``x``; ``float(x)`` → ``x`` (in parentheses where it needs them)."""
    import libcst as cst

    if isinstance(call.func, cst.Attribute):  # x.item()
        return call.func.value
    return parenthesized(call.args[0].value)


def _logging(source: SourceFile, node: Any) -> bool:
    """Whether ``node`` sits in an f-string or a ``print(...)``: a number for people, not for the loss."""
    import libcst as cst

    parent = source.parent(node)
    while parent is not None and not isinstance(parent, cst.BaseSmallStatement):
        if isinstance(parent, cst.FormattedString):
            return True
        if isinstance(parent, cst.Call) and dotted_name(parent.func) == "print":
            return True
        parent = source.parent(parent)
    return False


def _needs_parens(source: SourceFile, call: Any) -> bool:
    """Whether an expression put where ``call`` stood needs parentheses to keep its meaning."""
    import libcst as cst

    return not isinstance(source.parent(call), (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Return, cst.Arg,
                                                cst.Element, cst.Expr))
