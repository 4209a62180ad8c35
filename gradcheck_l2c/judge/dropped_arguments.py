"""Where a tensor handed on as an argument is dropped: a function of the user's file takes a parameter of the tensor's
own name, never reads it, and calls another function of the file that takes a parameter of that name too, with a
default, without passing it on (a loss whose ``forward`` is given ``logit_bias`` and calls
``self.get_logits(image, text, scale)``, whose ``logit_bias=None`` then stays None). The run tells which tensor never
learnt while its siblings did; the file's syntax tree tells which call left it out."""
from __future__ import annotations

import ast
import functools
import linecache
from collections.abc import Iterable
from dataclasses import dataclass

from gradcheck_l2c.judge.scopes import parse
from gradcheck_l2c.record.facts import Site

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class DroppedArgument:
    """The call that leaves the argument out, the function that was given it, and the one called without it."""

    site: Site
    given_to: str
    callee: str


def dropped_argument(files: Iterable[str], name: str) -> DroppedArgument | None:
    """The first call, in ``files``, that drops an argument called ``name`` as this module's docstring tells: a call of
    a module-level function by its name, or of a method of the caller's own class through ``self``."""
    for file in dict.fromkeys(files):
        found = _dropped_in(file, "".join(linecache.getlines(file)), name)
        if found is not None:
            return found
    return None


@functools.lru_cache(maxsize=64)
def _dropped_in(file: str, source: str, name: str) -> DroppedArgument | None:
    """Looked up once per file text and name (the layers of a model share their parameters' names)."""
    tree = parse(source)
    if tree is None:
        return None
    scopes = [(tree, _own_functions(tree))]
    scopes += [(node, _own_functions(node)) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    module_functions = scopes[0][1]
    for scope, functions in scopes:
        for function in functions.values():
            if name not in _parameters(function) or _reads(function, name):
                continue
            for call in ast.walk(function):
                if not isinstance(call, ast.Call):
                    continue
                method = isinstance(scope, ast.ClassDef) and _on_self(call)
                target = (functions if method else module_functions).get(_called_name(call)) \
                    if method or isinstance(call.func, ast.Name) else None
                if target is not None and target is not function and _leaves_out(call, target, name, method):
                    owner = f"{scope.name}." if isinstance(scope, ast.ClassDef) else ""
                    return DroppedArgument(Site(file, call.lineno), owner + function.name, target.name)
    return None


def _own_functions(scope: ast.Module | ast.ClassDef) -> dict[str, Function]:
    """The functions defined right in a module's or a class's body, by name (the last of a name wins, as it does)."""
    return {node.name: node for node in scope.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _on_self(call: ast.Call) -> bool:
    function = call.func
    return isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) and function.value.id == "self"


def _parameters(function: Function) -> list[str]:
    arguments = function.args
    return [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]


def _reads(function: Function, name: str) -> bool:
    """Whether the function's body reads the name (a nested function's body counts: it may use it)."""
    return any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
               for statement in function.body for node in ast.walk(statement))


def _called_name(call: ast.Call) -> str:
    function = call.func
    return function.id if isinstance(function, ast.Name) else function.attr if isinstance(function, ast.Attribute) else ""


def _leaves_out(call: ast.Call, target: Function, name: str, method: bool) -> bool:
    """Whether ``call`` of ``target``, which takes ``name`` with a default, does not give it: no such keyword, no
    ``**mapping``, no ``*sequence``, too few positional arguments to reach it (``self`` counted for a method)."""
    if any(keyword.arg in (name, None) for keyword in call.keywords):
        return False
    if any(isinstance(argument, ast.Starred) for argument in call.args):
        return False
    arguments = target.args
    positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    defaults = positional[len(positional) - len(arguments.defaults):] if arguments.defaults else []
    if name in (a.arg for a, default in zip(arguments.kwonlyargs, arguments.kw_defaults) if default is not None):
        return True
    return name in defaults and positional.index(name) >= len(call.args) + method
