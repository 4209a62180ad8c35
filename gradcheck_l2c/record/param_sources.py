"""Where the parameter list given to an optimizer was built, when that is not the optimizer's own line: a
variable assigned earlier (``params = list(a.parameters()) + list(b.parameters())``) or a method of the
user's that returns the groups (``model.get_optimizer_parameters(lr)``) or all the optimizer's arguments
(``Adam(**get_params_options(args, model))``), the last of groups written one a line, a group built beside the
list and never added to it, or an ``if`` whose untaken branch would have added it. A parameter left out of the list
is fixed there.

The optimizer's call is found in the syntax tree of the calling line; a name is followed to its last
assignment above the call in the same function, and a called function (looked up in the running frame,
attribute by attribute) to its only ``return``.
"""
from __future__ import annotations

import ast
import functools
import inspect
import linecache
from types import FrameType, GeneratorType
from typing import Any

import torch

from gradcheck_l2c.record.locations import USER, Site, frame_kind


def params_built_at(frame: FrameType, optimizer_class: str) -> Site | None:
    """The line that built the ``params`` argument of the ``optimizer_class(...)`` call running in ``frame``,
    if it is another line than the call's."""
    filename, line = frame.f_code.co_filename, frame.f_lineno
    params, assigning = _params_argument(filename, line, optimizer_class)
    if _held_by_name(params):
        value = _bound(frame, params)
        if assigning is not None and not _could_make(assigning, value):  # another branch's assignment ran
            assigning = _last_assigning(_scope(source_tree(filename), assigning.lineno), params, line, value)
        return Site(filename, assigning.lineno) if assigning is not None else None
    groups = _last_group_line(params)
    if groups is not None:
        return Site(filename, groups)
    if isinstance(params, ast.Call):
        gathered = _gathered_at(filename, params, line)
        return Site(filename, gathered) if gathered is not None else _returned_at(_resolve(params.func, frame))
    if isinstance(params, ast.keyword):  # ``**helper(...)``: the ``params`` of the keywords the helper returns
        return _returned_params_at(_resolve(params.value.func, frame))
    return None


#: Containers that gather modules for one purpose (``nn.ModuleList([student, projector])``), not a model.
_GATHERING = frozenset(("ModuleList", "ModuleDict"))


def _gathered_at(filename: str, params: ast.Call, line: int) -> int | None:
    """For ``<name>.parameters()``, ``<name>`` assigned above the call in the same function a module list or dict
    built there (the modules that train, gathered for the optimizer): the line a left-out module joins it."""
    func = params.func
    if not (isinstance(func, ast.Attribute) and func.attr == "parameters" and isinstance(func.value, ast.Name)):
        return None
    tree = source_tree(filename)
    assigning = _last_assigning(_scope(tree, line), func.value.id, line) if tree is not None else None
    value = getattr(assigning, "value", None)
    callee = value.func if isinstance(value, ast.Call) else None
    name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
    return assigning.lineno if name in _GATHERING else None


def _last_group_line(params: ast.expr | None) -> int | None:
    """Groups written one a line (a list over several lines): a left-out one goes after the last."""
    if isinstance(params, (ast.List, ast.Tuple)) and params.elts and params.end_lineno != params.lineno:
        return params.elts[-1].end_lineno
    return None


def group_left_out(frame: FrameType, held: set[int]) -> tuple[Site, list[Any]] | None:
    """A parameter group (a dict with a ``"params"`` list, the optimizer's own format) that the function building
    the optimizer holds in a variable, with parameters the optimizer does not hold: made and never given to it
    (``parameters.append(group)`` forgotten). Its parameters, and the line above the call that last built or
    extended it, after which it goes into the optimizer's list."""
    filename, line = frame.f_code.co_filename, frame.f_lineno
    found = None
    for name, value in frame.f_locals.items():
        group = value.get("params") if type(value) is dict else None
        if type(group) is not list or not group or any(id(p) in held for p in group):
            continue
        touched = _last_touch(filename, line, name)
        if touched is not None and (found is None or touched > found[0].line):
            found = Site(filename, touched), [p for p in group if isinstance(p, torch.nn.Parameter)]
    return found if found is not None and found[1] else None


def branch_left_out(frame: FrameType, optimizer_class: str, held: set[int]) -> tuple[Site, list[Any]] | None:
    """An ``if`` between the list's assignment and the optimizer's call, in the same function, whose branch would
    have added to that list (``groups.append({"params": criterion.parameters()})``) parameters the optimizer does
    not hold: the run went the other way (a loss's proxies trained only under another loss's name). Its line, and
    the parameters the branch names (of modules, tensors, or lists of them, as the frame holds them now)."""
    filename = frame.f_code.co_filename
    for line, names in _conditional_extensions(filename, frame.f_lineno, optimizer_class):
        left = [p for p in _tensors_named(frame, names) if id(p) not in held]
        if left:
            return Site(filename, line), left
    return None


@functools.lru_cache(maxsize=256)
def _conditional_extensions(filename: str, line: int, optimizer_class: str) -> tuple[tuple[int, tuple], ...]:
    """Each ``if`` (or ``elif``) between the assignment of the optimizer's list and its call whose branches add to
    that list: its line, and the names in what they add."""
    params, assigning = _params_argument(filename, line, optimizer_class)
    tree = source_tree(filename)
    if assigning is None or tree is None:
        return ()
    found = []
    for node in ast.walk(_scope(tree, line)):
        if isinstance(node, ast.If) and assigning.lineno < node.lineno < line:
            elif_ = len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If)  # walked as an ``if`` of its own
            names = tuple(name for statement in node.body + ([] if elif_ else node.orelse)
                          for name in _extension_names(statement, params))
            if names:
                found.append((node.lineno, names))
    return tuple(found)


def _extension_names(statement: ast.stmt, target: ast.AST) -> list[ast.Name]:
    """The names in what ``statement`` adds to ``target`` (``target.append(...)``, ``.extend``, ``.insert``, ``+=``)."""
    added: list[ast.AST] = []
    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _EXTENDING \
                and _same_target(node.func.value, target):
            added += node.args
        elif isinstance(node, ast.AugAssign) and _same_target(node.target, target):
            added.append(node.value)
    return [name for value in added for name in ast.walk(value) if isinstance(name, ast.Name)]


def _tensors_named(frame: FrameType, names: tuple[ast.Name, ...]) -> list[torch.Tensor]:
    """The tensors that require grad which the objects ``names`` hold in ``frame`` are or hold: a module's parameters,
    a tensor, the tensors of a list or tuple."""
    found: list[torch.Tensor] = []
    for name in names:
        value = _bound(frame, name)
        items = list(value.parameters()) if isinstance(value, torch.nn.Module) else \
            list(value) if isinstance(value, (list, tuple)) else [value]
        found += [t for t in items if isinstance(t, torch.Tensor) and t.requires_grad]
    return found


#: List methods that add to a list of parameter groups.
_EXTENDING = frozenset(("append", "extend", "insert"))


@functools.lru_cache(maxsize=256)
def _last_touch(filename: str, line: int, name: str) -> int | None:
    """The last line above ``line``, in the function holding it, that assigns ``name`` or calls a method on it
    or on a part of it (``name["params"].append(p)``)."""
    tree = source_tree(filename)
    if tree is None:
        return None
    scope = _scope(tree, line)
    found = _last_assignment(tree, name, line)
    for node in ast.walk(scope):
        if isinstance(node, ast.Call) and node.lineno < line and isinstance(node.func, ast.Attribute):
            root = node.func.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id == name and (found is None or node.lineno > found):
                found = node.lineno
    return found


@functools.lru_cache(maxsize=256)
def _params_argument(filename: str, line: int, optimizer_class: str) -> tuple[ast.AST | None, ast.stmt | None]:
    """The ``params`` argument of the ``optimizer_class(...)`` call on this line (or its ``**kwargs`` unpacking)
    and, when it is a name, the statement that last assigned it: found once per line (a loop may build an
    optimizer at every step)."""
    tree = source_tree(filename)
    call = _optimizer_call(tree, line, optimizer_class) if tree is not None else None
    if call is None:
        return None, None
    params = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "params"), None)
    if params is None:  # Adam(**helper(...)): the keyword unpacking stands for the arguments
        params = next((k for k in call.keywords if k.arg is None and isinstance(k.value, ast.Call)), None)
    assigning = _last_assigning(_scope(tree, call.lineno), params, call.lineno) if _held_by_name(params) else None
    return params, assigning


def _held_by_name(node: ast.AST | None) -> bool:
    """A plain name (``params``) or an attribute of one (``self.params``), as an assignment above may set it."""
    return isinstance(node, ast.Name) or isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)


def _same_target(target: ast.AST, wanted: str | ast.AST) -> bool:
    """Whether an assignment's ``target`` sets ``wanted``: a name, or a ``name.attribute`` node."""
    if isinstance(wanted, str):
        return isinstance(target, ast.Name) and target.id == wanted
    if isinstance(wanted, ast.Name):
        return isinstance(target, ast.Name) and target.id == wanted.id
    return (isinstance(target, ast.Attribute) and target.attr == wanted.attr and isinstance(target.value, ast.Name)
            and target.value.id == wanted.value.id)


def first_return(function: Any) -> Site | None:
    """The first ``return <value>`` line of a user function (a scheduler's lambda: its warmup branch)."""
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    if code is None or frame_kind(code.co_filename) != USER:
        return None
    tree = source_tree(code.co_filename)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.Lambda)) and code.co_firstlineno in (
                node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))):  # a decorator's line
            if isinstance(node, ast.Lambda):
                return Site(code.co_filename, node.lineno)
            returns = sorted(r.lineno for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None)
            return Site(code.co_filename, returns[0]) if returns else None
    return None


def binds_name(site: Site) -> bool:
    """Whether the statement at ``site`` assigns its value to a plain name (``model = Net()``), not to an
    attribute or item (``model.head = Head()``)."""
    return _binds_name(site.file, site.line)


@functools.lru_cache(maxsize=1024)
def _binds_name(file: str, line: int) -> bool:
    """`binds_name`, answered once per line (every Parameter a model built in a loop makes asks it again)."""
    tree = source_tree(file)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno <= line <= (node.end_lineno or node.lineno):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return all(isinstance(t, ast.Name) for t in targets)
    return False


@functools.lru_cache(maxsize=64)
def source_tree(filename: str) -> ast.Module | None:
    """The syntax tree of a user file, parsed once (None when it cannot be read or parsed)."""
    source = "".join(linecache.getlines(filename))
    try:
        return ast.parse(source) if source else None
    except SyntaxError:
        return None


def _optimizer_call(tree: ast.Module, line: int, optimizer_class: str) -> ast.Call | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name == optimizer_class:
                return node
    return None


def _last_assignment(tree: ast.Module, name: str | ast.AST, before: int) -> int | None:
    """The last line above ``before``, in the innermost function holding it (or the module), that assigns
    ``name`` (a name, or a ``name.attribute`` node) as a whole (``=``, ``+=``, an annotated assignment)."""
    found = _last_assigning(_scope(tree, before), name, before)
    return found.lineno if found is not None else None


def _last_assigning(scope: ast.AST, name: str | ast.AST, before: int,
                    value: Any = None) -> ast.Assign | ast.AugAssign | ast.AnnAssign | None:
    """The last statement above ``before`` in ``scope`` that assigns ``name`` (`_same_target`) as a whole (given the
    ``value`` it holds now, one that could have made it)."""
    found = None
    for node in ast.walk(scope):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.lineno < before:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_same_target(t, name) for t in targets) and (value is None or _could_make(node, value)):
                if found is None or node.lineno > found.lineno:
                    found = node
    return found


#: Methods that return a generator (``model.parameters()``): the value they bind is one.
_GENERATING = frozenset(("parameters", "named_parameters", "buffers", "children", "modules"))


def _could_make(assigning: ast.stmt, value: Any) -> bool:
    """Whether the right side of ``assigning`` could have made ``value``: a list display a list, a dict display a
    dict, ``model.parameters()`` or a generator expression a generator; anything else, anything (of two branches'
    assignments to one name, the one that ran)."""
    right = getattr(assigning, "value", None)
    if isinstance(right, (ast.List, ast.ListComp)):
        return isinstance(value, list)
    if isinstance(right, (ast.Dict, ast.DictComp)):
        return isinstance(value, dict)
    if isinstance(right, ast.GeneratorExp) or isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute) \
            and right.func.attr in _GENERATING:
        return isinstance(value, GeneratorType)
    return True


def _bound(frame: FrameType, name: ast.AST) -> Any:
    """What ``name`` (a name, or ``name.attribute``) holds in ``frame`` now; None if nothing."""
    if isinstance(name, ast.Name):
        return frame.f_locals.get(name.id, frame.f_globals.get(name.id))
    holder = frame.f_locals.get(name.value.id, frame.f_globals.get(name.value.id))
    return getattr(holder, name.attr, None)


def _scope(tree: ast.Module, line: int) -> ast.AST:
    """The innermost function holding ``line``, or the module."""
    scope: ast.AST = tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.lineno <= line <= (node.end_lineno or node.lineno) and node.lineno >= getattr(scope, "lineno", 0):
            scope = node
    return scope


def _resolve(func: ast.expr, frame: FrameType) -> Any:
    """The object a call's callee names (``model.get_groups``), looked up in the frame without calling
    anything but attribute reads; None when it is no plain name or attribute chain."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    scope = {**frame.f_globals, **frame.f_locals}
    value = scope.get(func.id, frame.f_builtins.get(func.id))
    for part in reversed(parts):
        try:
            value = inspect.getattr_static(value, part)
        except AttributeError:
            return None
    return value


def _returned_at(function: Any) -> Site | None:
    """The line of the only ``return <value>`` of a user function."""
    found = _only_return(function)
    return Site(found[0], found[2].lineno) if found is not None else None


def _returned_params_at(function: Any) -> Site | None:
    """For a user function that returns an optimizer's keyword arguments (``return dict(params=[...], lr=lr)``, or a
    name assigned such a dict in it): where its ``params`` groups end; else its ``return`` line."""
    found = _only_return(function)
    if found is None:
        return None
    file, node, returned = found
    value = returned.value
    if isinstance(value, ast.Name):
        assigning = _last_assigning(node, value.id, returned.lineno)
        value = assigning.value if isinstance(assigning, (ast.Assign, ast.AnnAssign)) else None
    params = None
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "dict":
        params = next((k.value for k in value.keywords if k.arg == "params"), None)
    elif isinstance(value, ast.Dict):
        params = next((v for k, v in zip(value.keys, value.values)
                       if isinstance(k, ast.Constant) and k.value == "params"), None)
    groups = _last_group_line(params)
    return Site(file, groups if groups is not None else returned.lineno)


def _only_return(function: Any) -> tuple[str, ast.AST, ast.Return] | None:
    """A user function's file, syntax node and only ``return <value>``."""
    function = getattr(function, "__func__", function)
    code = getattr(function, "__code__", None)
    if code is None or frame_kind(code.co_filename) != USER:
        return None
    node = function_node(code)
    if node is None:
        return None
    returns = [r for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None]
    return (code.co_filename, node, returns[0]) if len(returns) == 1 else None


def function_node(code: Any) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The syntax node of the ``def`` whose code is ``code`` (found by its name and its line, or a decorator's)."""
    tree = source_tree(code.co_filename)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name \
                and code.co_firstlineno in (node.lineno, *(d.lineno for d in node.decorator_list)):
            return node
    return None
