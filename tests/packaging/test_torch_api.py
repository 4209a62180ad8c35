"""The package reaches torch's modules through public names only, so the declared torch range stays honest.

A private name (``torch._C._TensorBase``, ``torch.overrides._get_current_function_mode_stack``) can move or
vanish in any release, which would break the tool beside a torch it declares it supports. The ones kept
on purpose are read in one module, ``record/torch_internals.py``, which lists each with its reason
(``PRIVATE_NAMES``, ``PRIVATE_ATTRIBUTES``), as does the README's "Supported versions". Names are read with
``ast`` from every module, following ``import torch.x as y`` and ``from torch.x import y`` aliases.
"""
from __future__ import annotations

import ast
from pathlib import Path

from gradcheck_l2c.record.torch_internals import PRIVATE_ATTRIBUTES, PRIVATE_NAMES

PACKAGE = Path(__file__).resolve().parents[2] / "gradcheck_l2c"
INTERNALS = PACKAGE / "record" / "torch_internals.py"
ALLOWED = set(PRIVATE_NAMES)


def is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
               for part in dotted.split("."))


def torch_aliases(tree: ast.Module) -> dict[str, str]:
    """Local names bound to torch modules or objects, mapped to their full dotted torch name."""
    aliases = {"torch": "torch"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "torch" and alias.asname:
                    aliases[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "torch":
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def torch_names(tree: ast.Module) -> set[str]:
    """Every dotted torch name the module uses: imports and attribute chains rooted at a torch alias."""
    aliases = torch_aliases(tree)
    found = set(aliases.values())
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        parts: list[str] = []
        value: ast.expr = node
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in aliases:
            found.add(".".join([aliases[value.id], *reversed(parts)]))
    return found


def test_private_torch_names_are_read_only_in_torch_internals_and_each_is_listed():
    private = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        allowed = ALLOWED if path == INTERNALS else set()
        for name in torch_names(ast.parse(path.read_text(encoding="utf-8"))):
            if is_private(name) and not any(name == ok or name.startswith(ok + ".") for ok in allowed):
                if not any(ok.startswith(name + ".") for ok in allowed):  # torch._C on the way to an allowed name
                    private.setdefault(name, str(path.relative_to(PACKAGE.parent)))
    assert private == {}


def test_torch_internal_attributes_are_named_only_in_torch_internals():
    """``tensor._version``, ``module._parameters``, ``"_load_from_state_dict"`` on the stack: attributes of torch
    objects, not names of torch modules, so the check above cannot see them; their names can."""
    elsewhere = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == INTERNALS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            text = node.attr if isinstance(node, ast.Attribute) else \
                node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
            if text is not None and any(text == name or (name.endswith("_") and text.startswith(name))
                                        for name in PRIVATE_ATTRIBUTES):
                elsewhere.setdefault(text, str(path.relative_to(PACKAGE.parent)))
    assert elsewhere == {}


def test_the_check_sees_private_names_through_aliases():
    tree = ast.parse("from torch import overrides as o\nimport torch.nn.modules.module as m\n"
                     "o._get_current_function_mode_stack()\nm._global_forward_hooks\n")
    assert {"torch.overrides._get_current_function_mode_stack",
            "torch.nn.modules.module._global_forward_hooks"} <= {n for n in torch_names(tree) if is_private(n)}


def test_is_parameter_answers_as_isinstance_does():
    """The watch's own Parameter test (past Parameter's Python-level instance check) for every kind of tensor."""
    import torch

    from gradcheck_l2c.record.torch_internals import is_parameter

    flagged = torch.zeros(2)
    flagged._is_param = True
    tensors = [torch.zeros(2), torch.zeros(2, requires_grad=True), torch.nn.Parameter(torch.zeros(2)),
               torch.nn.Buffer(torch.zeros(2)) if hasattr(torch.nn, "Buffer") else torch.ones(1), flagged]
    assert [is_parameter(t) for t in tensors] == [isinstance(t, torch.nn.Parameter) for t in tensors]
    assert [is_parameter(t) for t in tensors] == [False, False, True, False, True]
