"""One user file parsed by LibCST, with the positions of its nodes, and the small queries every
transformation asks: the nodes of a type that start on a line, the statement around a node, names a file
imports. Edits are maps from a node of this parse to a function that rewrites its updated twin."""
from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gradcheck_l2c.errors import UsageError

#: How to get LibCST when the ``fix`` command needs it.
INSTALL_HINT = "gradcheck-l2c fix needs LibCST: pip install 'gradcheck-l2c[fix]' (or pip install libcst)"

Rewrite = Callable[[Any], Any]


def require_libcst() -> None:
    """``UsageError`` with the install command when LibCST is missing."""
    if importlib.util.find_spec("libcst") is None:
        raise UsageError(INSTALL_HINT)


@dataclass
class SourceFile:
    """A file's text, its LibCST tree (``module``) and each node's position (1-based lines, 0-based columns)."""

    path: str
    text: str
    module: Any = field(repr=False)
    positions: Any = field(repr=False)
    parents: dict[int, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def read(cls, path: str) -> "SourceFile":
        import libcst as cst
        from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        try:
            wrapper = MetadataWrapper(cst.parse_module(text))
        except cst.ParserSyntaxError as error:
            raise SyntaxError(str(error).splitlines()[0]) from None
        positions = wrapper.resolve(PositionProvider)
        parents = {id(node): parent for node, parent in wrapper.resolve(ParentNodeProvider).items()}
        return cls(path, text, wrapper.module, positions, parents)

    def nodes(self, kind: type | tuple[type, ...]) -> Iterator[Any]:
        """Every node of ``kind``, in source order."""
        found = [node for node in self.positions if isinstance(node, kind)]
        return iter(sorted(found, key=lambda node: (self.start(node), -self.end_line(node))))

    def start(self, node: Any) -> tuple[int, int]:
        position = self.positions[node].start
        return position.line, position.column

    def end_line(self, node: Any) -> int:
        return self.positions[node].end.line

    def on_line(self, kind: type | tuple[type, ...], line: int, match: Callable[[Any], bool] = lambda _: True,
                column: int | None = None) -> list[Any]:
        """The nodes of ``kind`` that start on ``line`` and satisfy ``match``; with ``column`` (1-based, the
        finding's) the one starting there when there is one."""
        found = [node for node in self.nodes(kind) if self.start(node)[0] == line and match(node)]
        exact = [node for node in found if column is not None and self.start(node)[1] + 1 == column]
        return exact or found

    def parent(self, node: Any) -> Any:
        return self.parents.get(id(node))

    def statement(self, node: Any) -> Any:
        """The simple statement (``x = ...``, an expression) that holds ``node``."""
        import libcst as cst

        while node is not None and not isinstance(node, cst.BaseSmallStatement):
            node = self.parent(node)
        return node

    def enclosing(self, node: Any, kind: type | tuple[type, ...]) -> Any:
        """The nearest ancestor of ``kind`` (None at the top)."""
        node = self.parent(node)
        while node is not None and not isinstance(node, kind):
            node = self.parent(node)
        return node

    def within(self, node: Any, ancestor: Any) -> bool:
        """Whether ``node`` is ``ancestor`` or lies inside it."""
        while node is not None:
            if node is ancestor:
                return True
            node = self.parent(node)
        return False

    def module_alias(self, dotted: str) -> str | None:
        """The name this file reaches ``dotted`` (``torch``, ``torch.nn``) by at module level: ``import torch``
        gives ``torch``, ``import torch.nn as nn`` and ``from torch import nn`` give ``nn``; None when not
        imported."""
        import libcst as cst

        for statement in self.nodes(cst.Import):
            for alias in statement.names:
                name = dotted_name(alias.name)
                if alias.asname is not None and name == dotted:
                    return alias.asname.name.value
                if alias.asname is None and (name == dotted or name.startswith(dotted + ".")):
                    return dotted
        head, _, tail = dotted.rpartition(".")
        for statement in self.nodes(cst.ImportFrom):
            if statement.module is None or isinstance(statement.names, cst.ImportStar) or statement.relative:
                continue
            if dotted_name(statement.module) != head:
                continue
            for alias in statement.names:
                if alias.name.value == tail:
                    return alias.asname.name.value if alias.asname is not None else tail
        return None

    def nn_alias(self) -> str | None:
        """How this file names ``torch.nn`` (``nn`` or ``torch.nn``), None when it cannot."""
        alias = self.module_alias("torch.nn")
        if alias is not None:
            return alias
        return "torch.nn" if self.module_alias("torch") == "torch" else None

    def apply(self, edits: dict[int, list[Rewrite]]) -> str:
        """The file's text with each edited node (keyed by ``id``) rewritten; rewrites of nested nodes
        compose, each applied to its node as the inner rewrites left it."""
        import libcst as cst

        class _Rewriter(cst.CSTTransformer):
            def on_leave(self, original_node: Any, updated_node: Any) -> Any:
                for rewrite in edits.get(id(original_node), ()):
                    updated_node = rewrite(updated_node)
                return updated_node

        return self.module.visit(_Rewriter()).code


def dotted_name(node: Any) -> str:
    """``a.b.c`` for a Name/Attribute chain, '' for anything else."""
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else ""
    return ""


def expression(code: str) -> Any:
    """A LibCST expression from code the tool writes itself (a name like ``nn.Parameter``)."""
    import libcst as cst

    return cst.parse_expression(code)


def method_call(node: Any, name: str, arguments: int | None = 0) -> bool:
    """Whether ``node`` is ``<receiver>.name(...)`` with ``arguments`` positional arguments (None: any)."""
    import libcst as cst

    return (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == name
            and (arguments is None or len(node.args) == arguments))


def keyword(call: Any, name: str) -> Any:
    """The argument ``name=...`` of ``call``, or None."""
    return next((arg for arg in call.args if arg.keyword is not None and arg.keyword.value == name), None)


def without_keyword(call: Any, name: str) -> Any:
    """``call`` without its ``name=...`` argument, the commas tidied."""
    import libcst as cst

    args = [arg for arg in call.args if not (arg.keyword is not None and arg.keyword.value == name)]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return call.with_changes(args=args)


def parenthesized(node: Any) -> Any:
    """``node`` in parentheses unless it is atomic (a name, call, attribute, subscript, literal, display) or
    has them already: what an expression needs to keep its meaning where another one stood."""
    import libcst as cst

    atomic = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString,
              cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.FormattedString)
    if isinstance(node, atomic) or getattr(node, "lpar", None):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
