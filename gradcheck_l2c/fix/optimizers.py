"""Fixes for parameters an optimizer never holds: an optimizer built before the model changed (a layer
replaced, embeddings resized, a model pruned) is built after the change instead; an optimizer built from one
submodule's ``parameters()`` gets the sibling submodules that were left out."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.fix.source import SourceFile, dotted_name, expression, method_call
from gradcheck_l2c.fix.transform import Change, Unfixable
from gradcheck_l2c.records import Finding


def include_missing(source: SourceFile, findings: list[Finding]) -> Change:
    """Build the optimizer after the statements that change its model, or else add the missing submodules."""
    import libcst as cst

    calls = source.on_line(cst.Call, findings[0].line, lambda node: bool(node.args) and node.args[0].keyword is None
                           and method_call(node.args[0].value, "parameters"))
    if len(calls) != 1:
        raise Unfixable("the optimizer on this line is not built from one model's parameters()")
    try:
        return _build_later(source, calls[0])
    except Unfixable:
        return _add_siblings(source, calls[0], findings)


def _build_later(source: SourceFile, call: Any) -> Change:
    """``opt = SGD(model.parameters())`` followed by ``model.head = ...`` (or ``model.resize(...)``,
    ``prune(model)``) in the same block: the optimizer statement moves below the last such change."""
    import libcst as cst

    root = dotted_name(call.args[0].value.func.value).split(".")[0]
    line = source.statement(call)
    statement = source.parent(line) if isinstance(line, cst.Assign) else None
    block = source.parent(statement) if statement is not None else None
    if not isinstance(statement, cst.SimpleStatementLine) or not isinstance(block, (cst.IndentedBlock, cst.Module)):
        raise Unfixable("the optimizer is not built by a statement of its own")
    body = list(block.body)
    start = body.index(statement)
    changes = [index for index in range(start + 1, len(body)) if _changes(source, body[index], root)]
    if not changes:
        raise Unfixable(f"nothing after the optimizer changes {root}")
    target = changes[-1]
    name = dotted_name(line.targets[0].target) if len(line.targets) == 1 else ""
    if not name or any(_mentions(source, body[index], name) for index in range(start + 1, target + 1)):
        raise Unfixable("the optimizer is used before the model's last change")

    def move(node: Any) -> Any:
        rows = list(node.body)
        rows.insert(target, rows.pop(start))
        return node.with_changes(body=rows)

    change = Change(f"build the optimizer after {root} changed (after line {source.start(body[target])[0]})")
    change.rewrite(block, move)
    return change


def _changes(source: SourceFile, statement: Any, root: str) -> bool:
    """Whether ``statement`` may change which parameters ``root`` holds: it assigns ``root.x``, calls a method
    of ``root``, or passes ``root`` to a function."""
    import libcst as cst

    for node in source.nodes((cst.AssignTarget, cst.Call)):
        if not source.within(node, statement):
            continue
        if isinstance(node, cst.AssignTarget):
            targets = [element.value for element in node.target.elements] if isinstance(
                node.target, (cst.Tuple, cst.List)) else [node.target]
            if any(isinstance(target, cst.Attribute) and dotted_name(target).split(".")[0] == root
                   for target in targets):
                return True
        elif isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute) and dotted_name(node.func.value) == root and \
                    node.func.attr.value not in ("parameters", "named_parameters", "state_dict"):
                return True
            if any(isinstance(arg.value, cst.Name) and arg.value.value == root for arg in node.args):
                return True
    return False


def _mentions(source: SourceFile, statement: Any, name: str) -> bool:
    import libcst as cst

    return any(node.value == name and source.within(node, statement) for node in source.nodes(cst.Name))


def _add_siblings(source: SourceFile, call: Any, findings: list[Finding]) -> Change:
    """``Adam(model.encoder.parameters())`` missing ``AutoEncoder.decoder.*`` →
    ``Adam([*model.encoder.parameters(), *model.decoder.parameters()])``: the submodule joins the optimizer
    that holds its siblings."""
    import libcst as cst

    given = dotted_name(call.args[0].value.func.value)
    owner, _, held = given.partition(".")
    missing = []
    for finding in findings:
        parts = finding.tensor.split(".")
        path = ".".join(parts[1:-1])
        if len(parts) < 3 or not all(part.isidentifier() for part in parts[1:-1]) or not held:
            raise Unfixable(f"{finding.tensor} is not a named submodule beside {given}")
        if path == held or path.startswith(held + "."):
            raise Unfixable(f"{finding.tensor} is inside {given} already")
        if path not in missing:
            missing.append(path)
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    extra = [cst.StarredElement(expression(f"{owner}.{path}.parameters()")) for path in missing]

    def rewrite(node: Any) -> Any:
        spread = [cst.StarredElement(node.args[0].value, comma=comma)]
        spread += [element.with_changes(comma=comma) for element in extra[:-1]] + extra[-1:]
        return node.with_changes(args=[node.args[0].with_changes(value=cst.List(spread)), *node.args[1:]])

    change = Change("add " + ", ".join(f"{owner}.{path}" for path in missing) + " to the optimizer")
    change.rewrite(call, rewrite)
    return change
