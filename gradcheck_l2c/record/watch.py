"""Which tensors are watched, and the names a user recognises them by.

Parameters are named after the outermost module that holds them (``CNNCifar.alpha``,
``Sequential.0.weight``); other leaves after the variable or module attribute that holds them,
or after the line that created them (``train.py:12``).
"""
from __future__ import annotations

import fnmatch
import os
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.record.locations import USER, Site, frame_kind


@dataclass(eq=False)
class Watched:
    """What the tracer knows about one watched tensor."""

    key: int
    ref: weakref.ref
    shape: tuple[int, ...]
    site: Site | None
    is_parameter: bool
    explicit: bool = False
    user_leaf: bool = False
    owner: tuple[weakref.ref, str, str, int] | None = None  # (module, attribute, module class, id) it sits on
    variable: str | None = None
    name: str = ""
    aliases: tuple[str, ...] = ()
    got_grad: bool | None = None  # verdict at the last backward that involved it
    ever_grad: bool = False
    nonzero_grad: bool = False
    zero_checks: int = 0
    grad_read: Site | None = None  # user code read .grad and found None or zeros
    replaced: bool = False  # a torch layer reparametrised it (weight_norm ...): judged through the new leaves
    copied: bool = False  # copy.deepcopy copied it: a template, judged through its copies
    born: int = 0  # backward calls seen before it was watched
    optimized: bool = False  # an optimizer held it (at its construction or at a step())
    siblings: tuple[int, ...] = ()  # keys of the parameters of the module that holds it, and of its submodules
    forwards: tuple[Site | None, Site | None] = (None, None)  # forward of that module, and of its parent
    holder: str = ""  # class of the module that holds it
    last_reached: int = 0  # the backward call (1-based) that last gave it a gradient
    hook: Any = None

    @property
    def tensor(self) -> torch.Tensor | None:
        return self.ref()


@dataclass
class WatchSpec:
    """What the user asked to watch: name patterns, and tensors or modules given directly."""

    patterns: list[str] = field(default_factory=list)
    tensors: list[torch.Tensor] = field(default_factory=list)
    modules: list[nn.Module] = field(default_factory=list)
    names: dict[int, str] = field(default_factory=dict)  # id(tensor or module) -> name the user gave

    @classmethod
    def parse(cls, watch: Any) -> "WatchSpec":
        """Accepts None, a name/glob, a tensor, a module, a dict name -> tensor/module, or a list of these."""
        spec = cls()
        if watch is None:
            return spec
        if isinstance(watch, (str, torch.Tensor, nn.Module, dict)):
            items = [watch]
        else:
            try:
                items = list(watch)
            except TypeError:
                raise UsageError(
                    f"watch: expected names, tensors or modules (or a list of them), got {type(watch).__name__}"
                ) from None
        for item in items:
            if isinstance(item, dict):
                for name, value in item.items():
                    if not isinstance(value, (torch.Tensor, nn.Module)):
                        raise UsageError(
                            f"watch[{name!r}]: expected a tensor or a module, got {type(value).__name__}")
                    spec.names[id(value)] = str(name)
                    (spec.tensors if isinstance(value, torch.Tensor) else spec.modules).append(value)
            elif isinstance(item, str):
                if not item.strip():
                    raise UsageError("watch: empty name pattern")
                spec.patterns.append(item.strip())
            elif isinstance(item, nn.Module):
                spec.modules.append(item)
            elif isinstance(item, torch.Tensor):
                spec.tensors.append(item)
            else:
                raise UsageError(
                    f"watch: expected names, tensors or modules, got {type(item).__name__} ({item!r:.60})"
                )
        return spec

    @property
    def narrowed(self) -> bool:
        return bool(self.patterns or self.tensors or self.modules)


class WatchRegistry:
    """Every watched tensor, looked up by identity in O(1) on the tracer's hot path."""

    def __init__(self) -> None:
        self.by_id: dict[int, Watched] = {}
        self.all: list[Watched] = []
        self.modules: dict[int, tuple[weakref.ref, str | None]] = {}
        self.created: dict[int, tuple[weakref.ref, Site | None]] = {}  # Parameter creation sites
        # id -> key of the leaves user code asked gradients for: ops taking one first remember their line
        self.user_leaves: dict[int, int] = {}
        # (id(module), attribute) -> (module, line) where user code set a plain tensor attribute
        self.assigned: dict[tuple[int, str], tuple[weakref.ref, Site | None]] = {}

    def key_of(self, tensor: Any) -> int | None:
        watched = self.by_id.get(id(tensor))
        if watched is not None and watched.ref() is tensor:
            return watched.key
        return None

    def get(self, tensor: Any) -> Watched | None:
        watched = self.by_id.get(id(tensor))
        if watched is not None and watched.ref() is tensor:
            return watched
        return None

    def add(self, tensor: torch.Tensor, site: Site | None, *, owner: tuple[nn.Module, str] | None = None,
            explicit: bool = False) -> Watched:
        existing = self.get(tensor)
        if existing is not None:
            existing.explicit = existing.explicit or explicit
            if owner is not None and existing.owner is None:
                existing.owner = owner_of(*owner)
            return existing
        key = len(self.all)
        by_id = self.by_id
        ident = id(tensor)

        user_leaves = self.user_leaves

        def forget(_: Any, ident: int = ident, key: int = key) -> None:
            current = by_id.get(ident)
            if current is not None and current.key == key:
                del by_id[ident]
            if user_leaves.get(ident) == key:
                del user_leaves[ident]

        watched = Watched(
            key=key,
            ref=weakref.ref(tensor, forget),
            shape=tuple(tensor.shape),
            site=site,
            is_parameter=isinstance(tensor, nn.Parameter),
            explicit=explicit,
            owner=owner_of(*owner) if owner else None,
        )
        self.all.append(watched)
        by_id[ident] = watched
        return watched

    def add_module(self, module: nn.Module, variable: str | None = None) -> None:
        entry = self.modules.get(id(module))
        if entry is None or entry[0]() is not module:
            self.modules[id(module)] = (weakref.ref(module), variable)
        elif variable and entry[1] is None:
            self.modules[id(module)] = (entry[0], variable)

    def live_modules(self) -> list[tuple[nn.Module, str | None]]:
        alive = []
        for ref, variable in self.modules.values():
            module = ref()
            if module is not None:
                alive.append((module, variable))
        return alive

    def resolve_names(self) -> None:
        """Give every watched tensor its display name and the aliases patterns may match."""
        live = [_unwrapped(module, variable) for module, variable in self.live_modules()]
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
                self._note_structure(module)
        for watched in self.all:
            tensor = watched.ref()
            names = qualified.get(id(tensor), []) if tensor is not None else []
            if names:
                watched.name = names[0]
            elif not watched.name or watched.aliases == (watched.name,):
                watched.name = self._fallback_name(watched)
            variable = [watched.variable] if watched.variable else []
            watched.aliases = tuple(dict.fromkeys([watched.name, *names, *watched.aliases, *variable]))

    def _note_structure(self, root: nn.Module) -> None:
        """Remember, for each watched parameter of ``root``'s tree, the parameters of its module's tree (one
        getting a gradient shows that forward ran) and where the forward of its module and of that module's
        parent start: judged later, maybe after the model is gone."""
        modules = dict(root.named_modules())
        for prefix, module in modules.items():
            params = [self.get(p) for p in module.parameters(recurse=False)]
            keys = tuple(w.key for w in map(self.get, module.parameters()) if w is not None)
            parent = modules.get(prefix.rpartition(".")[0]) if prefix else None
            forwards = (forward_site(module), forward_site(parent) if parent is not None else None)
            for watched in params:
                if watched is not None:
                    watched.siblings, watched.forwards, watched.holder = keys, forwards, type(module).__name__

    @staticmethod
    def _fallback_name(watched: Watched) -> str:
        """A name for a tensor no live module holds: its module attribute, variable, or creation line."""
        if watched.owner is not None:
            return f"{watched.owner[2]}.{watched.owner[1]}"
        if watched.variable:
            return watched.variable
        if watched.site is not None:
            return f"{os.path.basename(watched.site.file)}:{watched.site.line}"
        return f"tensor#{watched.key}"


def forward_site(module: nn.Module) -> Site | None:
    """Where the ``forward`` of a module class the user wrote starts (None for torch's own modules)."""
    code = getattr(getattr(type(module), "forward", None), "__code__", None)
    if code is None or frame_kind(code.co_filename) != USER:
        return None
    return Site(os.path.abspath(code.co_filename), code.co_firstlineno)


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


def owner_of(module: nn.Module, attr: str) -> tuple[weakref.ref, str, str, int]:
    """How a watched tensor remembers the module attribute it sits on, even after the module is gone:
    (a weak reference, the attribute path, the module's class, the module's id while it lived)."""
    return (weakref.ref(module), attr, type(module).__name__, id(module))


def matches(watched: Watched, pattern: str) -> bool:
    """A pattern matches a tensor's full name, its name inside its module, or its variable name."""
    return any(fnmatch.fnmatchcase(alias, pattern) for alias in watched.aliases)


def selected(registry: WatchRegistry, spec: WatchSpec) -> tuple[set[int], list[str]]:
    """Keys of the tensors the user asked about, and the patterns that matched nothing."""
    if not spec.narrowed:
        return {w.key for w in registry.all}, []
    keys: set[int] = set()
    unmatched: list[str] = []
    for pattern in spec.patterns:
        hits = {w.key for w in registry.all if matches(w, pattern)}
        if not hits:
            unmatched.append(pattern)
        keys |= hits
    for tensor in spec.tensors:
        key = registry.key_of(tensor)
        if key is not None:
            keys.add(key)
    for module in spec.modules:
        for param in module.parameters():
            key = registry.key_of(param)
            if key is not None:
                keys.add(key)
    return keys, unmatched
