"""Fixes that register what a module or an optimizer should hold: a tensor attribute becomes an
``nn.Parameter``, a plain list or dict of modules or Parameters becomes ``nn.ModuleList``/``ModuleDict``/
``ParameterList``/``ParameterDict``."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.fix.source import SourceFile, dotted_name, expression, keyword, without_keyword
from gradcheck_l2c.fix.transform import Change, Unfixable
from gradcheck_l2c.records import Finding


def register(source: SourceFile, findings: list[Finding]) -> Change:
    """``self.w = torch.randn(..., requires_grad=True)`` → ``self.w = nn.Parameter(torch.randn(...))``
    (``nn.Parameter(t).to(device)`` → ``nn.Parameter(t.to(device))``);
    ``self.layers = [nn.Linear(...), ...]`` → ``nn.ModuleList([...])`` (Parameters: ``nn.ParameterList``)."""
    import libcst as cst

    attribute = findings[0].tensor.rpartition(".")[2]
    assigns = source.on_line(cst.Assign, findings[0].line, lambda node: len(node.targets) == 1 and dotted_name(
        node.targets[0].target).endswith(f".{attribute}") and dotted_name(node.targets[0].target).count(".") == 1)
    if len(assigns) != 1:
        raise Unfixable(f"no single assignment to self.{attribute} on this line")
    nn = source.nn_alias()
    if nn is None:
        raise Unfixable("the file does not import torch or torch.nn by a name the fix could use")
    again = [source.start(node)[0] for node in source.nodes(cst.AssignTarget) if node is not assigns[0].targets[0]
             and isinstance(node.target, cst.Attribute) and node.target.attr.value == attribute]
    if again:
        raise Unfixable(f".{attribute} is assigned again at line {again[0]}: a registered {attribute} would refuse "
                        "that value, so the change needs a decision")
    value = assigns[0].value
    if _is_container(value):
        wrapper, summary = _container(value, nn)
        if wrapper is None:
            raise Unfixable(summary)
    elif isinstance(value, (cst.Call, cst.Name, cst.Attribute, cst.Subscript)):
        wrapper, summary = f"{nn}.Parameter", "register it as an nn.Parameter"
    else:
        raise Unfixable("the value assigned is not one tensor expression")

    def rewrite(node: Any) -> Any:
        converted = _converted_parameter(node)
        if converted is not None:  # nn.Parameter(t).to(device) → nn.Parameter(t.to(device))
            made, method = converted
            moved = cst.Call(cst.Attribute(made.args[0].value, method.func.attr), method.args)
            return made.with_changes(args=[made.args[0].with_changes(value=moved), *made.args[1:]])
        inner = without_keyword(node, "requires_grad") if isinstance(node, cst.Call) and keyword(
            node, "requires_grad") is not None else node
        return cst.Call(expression(wrapper), [cst.Arg(inner)])

    change = Change(summary)
    change.rewrite(value, rewrite)
    return change


def _converted_parameter(node: Any) -> tuple[Any, Any] | None:
    """``nn.Parameter(t).to(...)`` (or ``.float()``, ``.cuda()``): the ``Parameter`` call and the method call
    whose copy the attribute holds instead of the Parameter."""
    import libcst as cst

    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Call):
        made = node.func.value
        if dotted_name(made.func).endswith("Parameter") and made.args and made.args[0].keyword is None:
            return made, node
    return None


def _is_container(node: Any) -> bool:
    import libcst as cst

    return isinstance(node, (cst.List, cst.Tuple, cst.ListComp, cst.Dict, cst.DictComp))


def _container(value: Any, nn: str) -> tuple[str | None, str]:
    """The registering container for a list/dict display, from what its elements are built by."""
    import libcst as cst

    if isinstance(value, (cst.Dict, cst.DictComp)):
        elements = [value.value] if isinstance(value, cst.DictComp) else [
            element.value for element in value.elements if isinstance(element, cst.DictElement)]
        plural = "Dict"
    else:
        elements = [value.elt] if isinstance(value, cst.ListComp) else [element.value for element in value.elements]
        plural = "List"
    parameters = [isinstance(e, cst.Call) and dotted_name(e.func).endswith("Parameter") for e in elements]
    if not elements:
        return None, "an empty container: what it will hold is not known here"
    if all(parameters):
        return f"{nn}.Parameter{plural}", f"register the Parameters: nn.Parameter{plural}"
    if not any(parameters) and all(isinstance(e, cst.Call) for e in elements):
        return f"{nn}.Module{plural}", f"register the modules: nn.Module{plural}"
    return None, "the container mixes Parameters with other values"
