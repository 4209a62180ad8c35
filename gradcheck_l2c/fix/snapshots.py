"""Fixes around ``state_dict``: a snapshot that aliases the live weights becomes a cloned one, and weights
loaded with ``load_state_dict`` (a copy under ``no_grad``) are passed to the forward calls that follow through
``torch.func.functional_call``, so the loss stays a function of the tensors they were computed from."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.fix.source import SourceFile, dotted_name, expression, method_call
from gradcheck_l2c.fix.transform import Change, Unfixable
from gradcheck_l2c.records import Finding


def clone_snapshot(source: SourceFile, findings: list[Finding]) -> Change:
    """``model.state_dict()`` or ``model.state_dict().copy()`` → ``{key: value.clone() for key, value in
    model.state_dict().items()}``."""
    import libcst as cst

    snapshots = source.on_line(cst.Call, findings[0].line, lambda node: method_call(node, "state_dict"))
    if not snapshots:
        raise Unfixable("no state_dict() call starts on this line")
    change = Change("take a cloned snapshot: {key: value.clone() for key, value in ....state_dict().items()}")
    for call in snapshots:
        outer = source.parent(source.parent(call))  # state_dict().copy(): Attribute, then Call
        target = outer if method_call(outer, "copy") and outer.func.value is call else call
        change.rewrite(target, _cloned)
    return change


def _cloned(node: Any) -> Any:
    snapshot = node.func.value if method_call(node, "copy") else node
    comprehension = expression("{key: value.clone() for key, value in SNAPSHOT.items()}")
    items = comprehension.for_in.iter.with_changes(func=comprehension.for_in.iter.func.with_changes(value=snapshot))
    return comprehension.with_changes(for_in=comprehension.for_in.with_changes(iter=items))


def functional_call(source: SourceFile, findings: list[Finding]) -> Change:
    """``model.load_state_dict(weights)`` followed by ``model(inputs)`` in the same block → the call becomes
    ``torch.func.functional_call(model, weights, (inputs,))`` (the load stays: later code may read the
    model's weights)."""
    import libcst as cst

    loads = source.on_line(cst.Call, findings[0].line, lambda node: method_call(node, "load_state_dict", 1))
    if len(loads) != 1 or not isinstance(loads[0].args[0].value, cst.Name) or loads[0].args[0].keyword:
        raise Unfixable("no load_state_dict(name) call on this line: the weights must have a name to pass on")
    load = loads[0]
    model, weights = dotted_name(load.func.value), load.args[0].value.value
    torch = source.module_alias("torch")
    if not model or torch != "torch":
        raise Unfixable("the model is not a plain name, or the file does not import torch as torch")
    statement = source.statement(load)
    line = source.start(statement)[0] if statement is not None else findings[0].line
    block = source.enclosing(statement, (cst.IndentedBlock, cst.Module))
    later = [node for node in source.nodes(cst.Call) if source.start(node)[0] > line
             and dotted_name(node.func) == model and source.within(node, block)]
    if not later:
        raise Unfixable(f"no call of {model}(...) follows in the same block")
    if any(arg.star for call in later for arg in call.args):
        raise Unfixable(f"a later call of {model} passes *args or **kwargs")
    change = Change(f"call {model} at the loaded weights: torch.func.functional_call({model}, {weights}, (...))")
    for call in later:
        change.rewrite(call, lambda node: _functional(node, weights))
    return change


def _functional(call: Any, weights: str) -> Any:
    import libcst as cst

    positional = [arg.value for arg in call.args if arg.keyword is None and arg.star == ""]
    named = [arg for arg in call.args if arg.keyword is not None]
    inputs = cst.Tuple([cst.Element(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                        for value in positional[:-1]] + [cst.Element(value, comma=cst.Comma()) for value in
                                                          positional[-1:]])
    arguments = [cst.Arg(call.func), cst.Arg(cst.Name(weights)), cst.Arg(inputs)]
    if named:
        arguments.append(cst.Arg(cst.Dict([cst.DictElement(cst.SimpleString(repr(arg.keyword.value)), arg.value)
                                           for arg in named])))
    comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    return cst.Call(expression("torch.func.functional_call"),
                    [arg.with_changes(comma=comma) for arg in arguments[:-1]] + arguments[-1:])

