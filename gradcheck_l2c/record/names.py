"""The names a user recognises watched tensors by, and the facts about modules learnt with them.

Parameters are named after the outermost module that holds them (``CNNCifar.alpha``,
``Sequential.0.weight``); other leaves after the variable or module attribute that holds them,
or after the line that created them (``train.py:12``).
"""
from __future__ import annotations

import functools
import os
from collections import Counter
from typing import Any

import torch
from torch import nn

from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.source_sites import forward_reads, forward_site
from gradcheck_l2c.record.watch import Watched, WatchRegistry


def resolve_names(registry: WatchRegistry) -> None:
    """Give every watched tensor its display name and the aliases patterns may match (only those whose name
    can still change: the work stays flat over a run that watches a fresh tensor at every step)."""
    live = [_unwrapped(module, variable) for module, variable in registry.live_modules()]
    inner: set[int] = set()
    for module, _ in live:
        for child in module.modules():
            if child is not module:
                inner.add(id(child))
    roots = [(module, variable) for module, variable in live if id(module) not in inner]
    classes = Counter(type(module).__name__ for module, _ in roots)
    qualified: dict[int, list[str]] = {}
    for module, variable in roots:
        root = type(module).__name__
        for qualname, tensor in _named_tensors(module):
            names = qualified.setdefault(id(tensor), [])
            if variable and classes[root] > 1:  # copies of one model (a target network): by variable
                names.append(f"{variable}.{qualname}")
            names.extend([f"{root}.{qualname}", qualname])
            if variable:
                names.append(f"{variable}.{qualname}")
    for module, _ in live:
        if id(module) not in inner:
            _note_structure(registry, module)
    # the names of a gone leaf known by its line alone, by id(Site): a loop's leaves share one (`WatchRegistry.add`),
    # and a Site hashes in Python
    by_line: dict[int, tuple[str, tuple[str, ...]]] = {}
    for watched in registry.unsettled():
        tensor = watched.ref()
        if tensor is None and not (watched.name or watched.aliases or watched.variable) and watched.owner is None \
                and watched.site is not None:  # a loop's fresh leaf, gone before a discovery saw it: named by line
            line = id(watched.site)
            named = by_line.get(line)
            if named is None:
                name = registry.shared(_fallback_name(watched))
                named = by_line[line] = name, registry.shared((name,))
            watched.name, watched.aliases = named
            continue
        names = qualified.get(id(tensor), []) if tensor is not None else []
        if names:
            watched.name = names[0]
        elif not watched.name or watched.aliases == (watched.name,):
            watched.name = registry.shared(_fallback_name(watched))
        if not (names or watched.variable) and watched.aliases in ((), (watched.name,)):
            watched.aliases = registry.shared((watched.name,))  # a leaf known by its line alone (a fresh leaf per step)
            continue
        variable = [watched.variable] if watched.variable else []
        watched.aliases = registry.shared(tuple(dict.fromkeys([watched.name, *names, *watched.aliases, *variable])))


#: User leaves one line made, at least, for that line's leaves to share a variable name (a loop's fresh input).
ALIKE = 3


def name_lines_alike(registry: WatchRegistry) -> None:
    """Name the user leaves one line made after the variable that held those seen in one (a loop's ``x``), when it
    is the only one, so that the leaves a discovery pass found alive and those it did not are reported as one
    tensor, not as ``x`` and ``train.py:12``. Lines that made fewer than `ALIKE` leaves, or leaves held by two
    variables (one helper making ``w1`` and ``w2``), keep their names. Once, at the end: it reads every leaf."""
    lines: dict[Any, list[Watched]] = {}
    for watched in registry.all:
        if watched.user_leaf and watched.owner is None and watched.site is not None:
            lines.setdefault(watched.site, []).append(watched)
    for site, leaves in lines.items():
        variables = {watched.variable for watched in leaves if watched.variable}
        if len(leaves) < ALIKE or len(variables) != 1:
            continue
        variable = variables.pop()
        line_name = _line_name(site.file, site.line)  # the name of each leaf here without owner or variable
        renamed: dict[tuple[str, ...], tuple[str, ...]] = {}  # aliases -> the same led by the variable (shared)
        for watched in leaves:
            if watched.variable is None and watched.name == line_name:
                watched.variable = watched.name = variable
                aliases = renamed.get(watched.aliases)
                if aliases is None:
                    aliases = renamed[watched.aliases] = registry.shared(
                        tuple(dict.fromkeys([variable, *watched.aliases])))
                watched.aliases = aliases


def _note_structure(registry: WatchRegistry, root: nn.Module) -> None:
    """Remember, for each watched parameter of ``root``'s tree, the parameters of its module's tree (one
    getting a gradient shows that forward ran), where the forward of its module and of that module's
    parent start, and where user code first called each module above it (and whether its class's forward is user
    code): judged later, maybe after the model is gone."""
    modules = dict(root.named_modules())
    called = registry.called
    for prefix, module in modules.items():
        named = list(module.named_parameters(recurse=False))
        params = [registry.get(p) for _, p in named]
        if not any(params):
            continue
        keys = tuple(w.key for w in map(registry.get, module.parameters()) if w is not None)
        parent = modules.get(prefix.rpartition(".")[0]) if prefix else None
        forwards = (forward_site(type(module)), forward_site(type(parent)) if parent is not None else None)
        chain = [module] + [modules[prefix.rsplit(".", depth)[0]] for depth in range(1, prefix.count(".") + 1)]
        if prefix:
            chain.append(root)
        calls = tuple((id(m), type(m).__name__, called[id(m)][1] if id(m) in called else None,
                       forward_site(type(m)) is not None) for m in chain)
        instead = _called_instead(registry, chain)
        for (attribute, _), watched in zip(named, params):
            if watched is not None:
                watched.siblings, watched.forwards, watched.holder = keys, forwards, type(module).__name__
                watched.calls, watched.read_in_forward = calls, forward_reads(type(module), attribute)
                if instead is not None:
                    registry.instead[watched.key] = instead
                else:  # called since
                    registry.instead.pop(watched.key, None)


def _called_instead(registry: WatchRegistry, chain: list[nn.Module]) -> tuple[str, str, Site] | None:
    """Of the modules from a parameter's holder up, the outermost never called whose parent was: when a sibling of its
    class in that parent was called on two lines (`WatchRegistry.called_again`), its attribute, the sibling's and the
    sibling's second line (``self.masked_attention(...)`` written twice where ``self.cross_attention`` belongs)."""
    called, again = registry.called, registry.called_again
    for module, parent in zip(chain, chain[1:]):
        if id(module) in called or id(parent) not in called:
            continue
        children = list(parent.named_children())
        name = next((n for n, child in children if child is module), None)
        twin = next(((n, again[id(child)][1]) for n, child in children if type(child) is type(module)
                     and child is not module and id(child) in again and again[id(child)][1] is not None), None)
        return (name, *twin) if name is not None and twin is not None else None
    return None


def _fallback_name(watched: Watched) -> str:
    """A name for a tensor no live module holds: its module attribute, variable, or creation line."""
    if watched.owner is not None:
        return f"{watched.owner.cls}.{watched.owner.attribute}"
    if watched.variable:
        return watched.variable
    if watched.site is not None:
        return _line_name(watched.site.file, watched.site.line)
    return f"tensor#{watched.key}"


@functools.lru_cache(maxsize=1024)
def _line_name(file: str, line: int) -> str:
    """``train.py:12``: made once per line (a loop's fresh leaves share it)."""
    return f"{os.path.basename(file)}:{line}"


def name_variables(registry: WatchRegistry, variables: dict[str, Any], limit: int = 64) -> None:
    """Name watched tensors that have no name yet after the variables holding them: ``b``, or an item
    of a small list or dict variable (``fast_weights[0]``, ``params['w']``); plain variables first."""
    containers = []
    for name, value in variables.items():
        if isinstance(value, torch.Tensor):
            _name(registry, value, name)
        elif type(value) in (list, tuple, dict) and len(value) <= limit:
            containers.append((name, value))
    for name, value in containers:
        items = value.items() if type(value) is dict else enumerate(value)
        for index, item in items:
            if isinstance(item, torch.Tensor):
                _name(registry, item, f"{name}[{index!r}]")


def _name(registry: WatchRegistry, tensor: torch.Tensor, name: str) -> None:
    watched = registry.get(tensor)
    if watched is not None and watched.variable is None and watched.owner is None and name != "self":
        watched.variable = name
        registry.changes += 1


def _unwrapped(module: nn.Module, variable: str | None) -> tuple[nn.Module, str | None]:
    """A data-parallel wrapper (DDP, DataParallel) stands for the module it wraps: its parameters are
    named ``Net.fc.weight`` on every rank, as without the wrapper, and ``model.module.fc.weight``."""
    if isinstance(module, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
        return module.module, f"{variable}.module" if variable else None
    return module, variable


def _named_tensors(root: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """Parameters, then grad-requiring tensors held as plain attributes (also inside a list, tuple or
    dict attribute) of ``root`` and its submodules, with their dotted names (``layers[0]``)."""
    found = list(root.named_parameters(remove_duplicate=False))
    for prefix, module in root.named_modules():
        dot = f"{prefix}." if prefix else ""
        for attr, value in vars(module).items():
            if attr.startswith("_"):
                continue
            if isinstance(value, torch.Tensor):
                found.append((f"{dot}{attr}", value))
            elif type(value) in (list, tuple):
                found.extend((f"{dot}{attr}[{i}]", v) for i, v in enumerate(value) if isinstance(v, torch.Tensor))
            elif type(value) is dict:
                found.extend((f"{dot}{attr}[{k!r}]", v) for k, v in value.items() if isinstance(v, torch.Tensor))
    return found


def variable_name(frame: Any, tensor: torch.Tensor) -> str | None:
    """The name of a local variable of ``frame`` that holds ``tensor``."""
    for name, value in frame.f_locals.items():
        if value is tensor:
            return name
    return None
