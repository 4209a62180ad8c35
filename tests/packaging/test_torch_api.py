"""The package reaches torch's modules through public names only, so the declared torch range stays honest.

A private name (``torch._C._TensorBase``, ``torch.overrides._get_current_function_mode_stack``) can move or
vanish in any release, which would break the tool beside a torch it declares it supports. The ones kept
on purpose are listed in ``ALLOWED`` and in the README's "Supported versions". Names are read with
``ast`` from every module, following ``import torch.x as y`` and ``from torch.x import y`` aliases.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "gradcheck_l2c"
#: Internal names the tracer needs, each present from torch 2.1 to 2.14: switching torch functions off while
#: judging, and asking whether the tracer's mode is still on the stack (so an interrupted exit can run again).
ALLOWED = {"torch._C.DisableTorchFunction", "torch.overrides._get_current_function_mode_stack",
           # DDP's parameter list in the order of the indices its unused-parameter error prints
           "torch.nn.parallel.DistributedDataParallel._build_params_for_reducer"}


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


def test_only_public_torch_names_besides_the_allowed_ones():
    private = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for name in torch_names(ast.parse(path.read_text(encoding="utf-8"))):
            if is_private(name) and not any(name == ok or name.startswith(ok + ".") for ok in ALLOWED):
                if not any(ok.startswith(name + ".") for ok in ALLOWED):  # torch._C on the way to an allowed name
                    private.setdefault(name, str(path.relative_to(PACKAGE.parent)))
    assert private == {}


def test_the_check_sees_private_names_through_aliases():
    tree = ast.parse("from torch import overrides as o\nimport torch.nn.modules.module as m\n"
                     "o._get_current_function_mode_stack()\nm._global_forward_hooks\n")
    assert {"torch.overrides._get_current_function_mode_stack",
            "torch.nn.modules.module._global_forward_hooks"} <= {n for n in torch_names(tree) if is_private(n)}
