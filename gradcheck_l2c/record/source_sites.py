"""Where in the user's source a module's class, its ``forward`` and its attributes are defined: the places named
for parameters whose making line the trace did not see (modules built before it), read from code objects and
source once per class."""
from __future__ import annotations

import ast
import functools
import inspect
import os
import textwrap
from typing import Any

from torch import nn

from gradcheck_l2c.record.code_lines import self_attribute_ops
from gradcheck_l2c.record.locations import KIND_CACHES, USER, Site, frame_kind


def module_site(module: Any) -> Site | None:
    """Where a module's class is defined: the fallback location for its parameters."""
    try:
        file = inspect.getsourcefile(type(module))
        _, line = inspect.getsourcelines(type(module))
    except (OSError, TypeError):
        return None
    return Site(os.path.abspath(file), line) if file else None


@functools.lru_cache(maxsize=256)
def forward_reads(cls: type, attribute: str) -> Site | None:
    """The line where the user's ``forward`` of a module class computes with ``self.<attribute>`` (a method of it, an
    operator on it), if it does."""
    code = getattr(getattr(cls, "forward", None), "__code__", None)
    if code is None or frame_kind(code.co_filename) != USER:
        return None
    line = self_attribute_ops(code).get(attribute)
    return Site(os.path.abspath(code.co_filename), line) if line is not None else None


@functools.lru_cache(maxsize=256)
def forward_site(cls: type, user_only: bool = True) -> Site | None:
    """Where a module class defines ``forward``: only for classes of user code (their parameters are judged
    by it), or, not ``user_only``, wherever it is (DDP's report names torch's own modules as well)."""
    if user_only:
        code = getattr(getattr(cls, "forward", None), "__code__", None)
        if code is None or frame_kind(code.co_filename) != USER:
            return None
        return Site(os.path.abspath(code.co_filename), code.co_firstlineno)
    try:
        function = inspect.unwrap(cls.forward)
        file = inspect.getsourcefile(function)
        line = inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        return None
    return Site(os.path.abspath(file), line) if file else None


KIND_CACHES.append(forward_site)


def attribute_site(module: nn.Module, path: str) -> Site | None:
    """Where user code assigned the attribute at ``path`` (``"proj.weight"``) below ``module``: the
    ``self.proj = ...`` line in the ``__init__`` (or another method) of the deepest class of user code on
    the way. For modules built before the trace, whose registration the trace did not see."""
    holder: Any = module
    found = None
    for part in path.split("."):
        if not isinstance(holder, nn.Module):
            break
        site = _assignment_in_class(type(holder), part)
        if site is not None:
            found = site
        holder = getattr(holder, part, None)
    return found


_assignments: dict[type, dict[str, Site]] = {}


def _assignment_in_class(cls: type, attr: str) -> Site | None:
    """The first ``self.<attr> = ...`` in the source of ``cls`` or of a user-code base class,
    ``__init__`` first; read once per class."""
    for klass in cls.__mro__:
        if klass is nn.Module or klass is object:
            break
        table = _assignments.get(klass)
        if table is None:
            table = _assignments[klass] = _self_assignments(klass)
        if attr in table:
            return table[attr]
    return None


def _self_assignments(cls: type) -> dict[str, Site]:
    """``attribute -> line`` of the ``self.<attribute> = ...`` statements in the methods ``cls`` defines
    in user code (read through their code objects: the class's module need not be importable)."""
    methods = [f for f in vars(cls).values() if inspect.isfunction(f)
               and frame_kind(f.__code__.co_filename) == USER]
    methods.sort(key=lambda f: f.__name__ != "__init__")
    table: dict[str, Site] = {}
    for method in methods:
        try:
            lines, first = inspect.getsourcelines(method)
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except (OSError, TypeError, SyntaxError):
            continue
        file = os.path.abspath(method.__code__.co_filename)
        arguments = method.__code__.co_varnames[:1]  # the name `self` goes by
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id in arguments:
                    table.setdefault(target.attr, Site(file, first + target.lineno - 1))
    return table
