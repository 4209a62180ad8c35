"""Grad-requiring tensors, and Parameters in plain lists/dicts, held by live modules without being
registered (results computed from Parameters, like ``self.loss``, are fine): remembered with their
creation site while the modules are alive, for the ``non_parameter_tensor`` detector to judge after
the run. Also plain tensors fresh from an initialising factory (``torch.zeros``, ``torch.randn``) that a
module of a trained model holds unregistered and that nothing ever wrote: weights that were meant to learn. And
Parameters user code made in a module's ``__init__`` that no module registers (kept in another object, or only
through a copy such as ``nn.Parameter(t).to(device)``): they get gradients, and no optimizer sees them."""
from __future__ import annotations

import weakref
from typing import Any, NamedTuple

import torch
from torch import nn

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.entries import entry_ref
from gradcheck_l2c.record.locations import USER, Site, frame_kind, user_frame
from gradcheck_l2c.record.module_flags import ModuleFlags
from gradcheck_l2c.record.source_sites import module_site
from gradcheck_l2c.record.stacks import StackEntry, user_stack
from gradcheck_l2c.record.torch_internals import version
from gradcheck_l2c.record.watch import WatchRegistry


class Unregistered(NamedTuple):
    """A module attribute that holds what should be registered: ``problem`` is ``tensor`` (requires grad,
    not a Parameter), ``list``/``tuple``/``dict`` (of Parameters), ``list of modules``/``tuple of
    modules``/``dict of modules`` (whose parameters the holder does not register), ``plain`` (a tensor
    without grad that user code treated as learnable, its ``symptom`` the line that did) or ``initialised``
    (a plain tensor from ``factory`` that nothing wrote, held by a module of a model an optimizer stepped),
    ``copied`` (a Parameter made in the module's ``__init__`` that it holds only as a computed copy) or
    ``elsewhere`` (such a Parameter kept in a plain object or container below the attribute), ``buffer`` (a tensor
    that requires grad registered with ``register_buffer``).
    ``keys``: the watched tensors it hides from ``parameters()``."""

    site: Site | None
    problem: str
    symptom: Site | None
    keys: frozenset[int] = frozenset()
    factory: str = ""


class UnregisteredLog:
    """(module class, attribute) -> what is wrong with it, first seen while the module lived."""

    def __init__(self) -> None:
        self.found: dict[tuple[str, str], Unregistered] = {}
        #: id -> (tensor, factory, version when made, the user frames then if a module's ``__init__`` ran)
        self._fresh: dict[int, tuple[weakref.ref, str, int, tuple[StackEntry, ...]]] = {}
        #: id of a fresh tensor user code put on a module, or of a view made from it without grad (``.t()``)
        #: -> (that tensor, the module, the id of the fresh tensor)
        self.held: dict[int, tuple[weakref.ref, weakref.ref, int]] = {}
        self._weights: set[int] = set()  # fresh tensors an op in their module's own forward used as a weight
        #: key of a Parameter user code made in a module's ``__init__`` -> that module, until it is registered
        self._constructed: dict[int, weakref.ref] = {}
        self.buffers_registered = 0  # ``register_buffer`` calls: one may hold a tensor looked for as an attribute
        #: id of a tensor `plain_attribute` found no module holding -> (the tensor, what could change that then)
        self._not_held: dict[int, tuple[weakref.ref, tuple[int, int]]] = {}
        self.flags = ModuleFlags()  # ``module.requires_grad = True``: an attribute no parameter reads

    def made_by(self, key: int | None, module: nn.Module | None) -> None:
        """User code made the Parameter ``key`` while ``module``'s ``__init__`` ran: it should register it."""
        if key is not None and module is not None:
            self._constructed[key] = weakref.ref(module)

    def buffered(self, registry: WatchRegistry, module: nn.Module, name: str, tensor: torch.Tensor,
                 site: Site | None) -> None:
        """``module`` registered the watched ``tensor``, which requires grad, as a buffer (``register_buffer("length",
        param)``): a buffer is no parameter, so neither parameters() nor an optimizer built from it holds it."""
        key = registry.key_of(tensor)
        if key is not None:
            self.found[(type(module).__name__, name)] = Unregistered(site, "buffer", None, frozenset({key}))

    def made(self, tensor: torch.Tensor, factory: str) -> None:
        """An initialising factory made a plain floating-point tensor (kept while it lives), with the user frames
        then when a module's ``__init__`` runs (a weight a helper of its ``build()`` made, kept in a plain list)."""
        ident, fresh = id(tensor), self._fresh
        stack = user_stack(2) if constructing_module(user_frame(2)) is not None else ()
        fresh[ident] = (entry_ref(tensor, fresh, ident), factory, version(tensor), stack)

    def assigned(self, module: nn.Module, value: torch.Tensor) -> None:
        """User code put a plain tensor on a module: if a factory made it, watch how its module uses it."""
        made = self._fresh.get(id(value))
        if made is not None and made[0]() is value:
            self._hold(value, weakref.ref(module), id(value))

    def _hold(self, tensor: torch.Tensor, module: weakref.ref, origin: int) -> None:
        ident, held = id(tensor), self.held
        held[ident] = (entry_ref(tensor, held, ident), module, origin)

    def derived(self, args: tuple, out: torch.Tensor) -> None:
        """An op without grad made ``out`` from a held tensor (``self.keys.t()``): it stands for that tensor."""
        for arg in args:
            entry = self.held.get(id(arg)) if type(arg) is torch.Tensor else None
            if entry is not None and entry[0]() is arg:
                self._hold(out, entry[1], entry[2])
                return

    def used(self, args: tuple, frame: Any) -> None:
        """An op whose result requires grad ran with a held fresh tensor among its operands: it is a weight
        when the op is written in the forward of the module that holds it (``self.alpha * x``), not an input
        handed to a model (a fixed noise vector for samples)."""
        for arg in args:
            entry = self.held.get(id(arg)) if type(arg) is torch.Tensor else None
            if entry is not None and entry[2] not in self._weights and entry[0]() is arg and frame is not None \
                    and frame.f_code.co_name == "forward" and frame.f_locals.get("self") is entry[1]():
                self._weights.add(entry[2])

    def collect_initialised(self, registry: WatchRegistry) -> None:
        """At the end: the plain tensors fresh from a factory, never written since, that user code put on a
        module (not as a buffer) of a model whose parameters an optimizer stepped, and that the module's forward
        used as a weight. A constant of one value (a scale, a device marker) is not a weight."""
        for root, _ in registry.live_modules():
            if not any(w is not None and w.optimized and w.ever_grad for w in map(registry.get, root.parameters())):
                continue
            for module in root.modules():
                owner = type(module).__name__
                for attr, value in vars(module).items():
                    made = self._fresh.get(id(value)) if id(value) in self._weights else None
                    if made is None or made[0]() is not value or (owner, attr) in self.found:
                        continue
                    entry = registry.assigned.get((id(module), attr))
                    if entry is None or entry[0]() is not module or value.numel() <= 1 or version(value) != made[2]:
                        continue
                    self.found[(owner, attr)] = Unregistered(entry[1], "initialised", None, factory=made[1])

    def collect(self, registry: WatchRegistry) -> None:
        """Remember every unregistered grad-requiring attribute of the live modules, with its creation site, and
        the Parameters made in a module's ``__init__`` that no module registered."""
        seen: set[int] = set()
        for root, _ in registry.live_modules():
            for module in root.modules():  # a submodule that holds a plain list has no parameter of its own
                if id(module) in seen:
                    continue
                seen.add(id(module))
                self._collect(registry, module)
        self.collect_constructed(registry)

    def _collect(self, registry: WatchRegistry, module: nn.Module) -> None:
        owner = type(module).__name__
        for attr, value in vars(module).items():
            if (attr.startswith("__") or attr in _MODULE_STATE) or (owner, attr) in self.found:
                continue
            problem = _problem(module, value)
            if problem is not None:
                # a container that holds the modules or Parameters itself: the line that made it; nested ones
                # (a dict of dicts) are told where the Parameters are made
                entry = registry.assigned.get((id(module), attr)) if problem != "tensor" and _direct(value) else None
                site = entry[1] if entry is not None and entry[0]() is module else None
                site = site or _creation_site(registry, value) or module_site(module)
                hidden = frozenset(k for k in map(registry.key_of, _held_tensors(value)) if k is not None)
                self.found[(owner, attr)] = Unregistered(site, problem, None, hidden)

    def collect_constructed(self, registry: WatchRegistry) -> None:
        """The Parameters made in a module's ``__init__`` that got gradients, are in no optimizer, and that no
        module registered: remembered under the attribute that holds them (or a copy of them)."""
        if not self._constructed:
            return
        hidden = {key for entry in self.found.values() for key in entry.keys}
        for key, ref in list(self._constructed.items()):
            watched, module = registry.all[key], ref()
            tensor = watched.tensor
            if watched.owner is not None or watched.optimized or tensor is None or module is None \
                    or any(param is tensor for param in module.parameters()):
                del self._constructed[key]  # registered, handed to an optimizer, or gone: nothing to tell
                continue
            if not watched.ever_grad or key in hidden:
                continue
            attr, copied = _held_at(module, tensor)
            del self._constructed[key]
            problem = "copied" if copied else "elsewhere"
            self.found[(type(module).__name__, attr or f"<{problem}>")] = Unregistered(
                watched.site, problem, None, frozenset({key}))

    def plain_attribute(self, registry: WatchRegistry, tensor: torch.Tensor, symptom: Site | None) -> None:
        """A tensor that never required grad was treated as learnable (its ``.grad`` read, or handed to
        an optimizer): if a module holds it as a plain attribute, or in a plain list, tuple or dict attribute, that
        assignment is the bug (for an item, the line of the module's own code that made it, when known).

        A tensor no module holds is remembered so until an attribute is set, a buffer registered or a module first
        seen: a loop that logs the gradients of parameters frozen before the trace reads them at every step, and
        each look walks every module."""
        stamp = (registry.changes, self.buffers_registered)
        known = self._not_held.get(id(tensor))
        if known is not None and known[1] == stamp and known[0]() is tensor:
            return
        for root, _ in registry.live_modules():
            for module in root.modules():
                buffers = dict(module.named_buffers(recurse=False))  # a buffer is no parameter either
                for attr, value in (*vars(module).items(), *buffers.items()):
                    if attr.startswith("_"):
                        continue
                    item = value is not tensor and type(value) in (list, tuple, dict) and _holds(value, tensor)
                    if value is tensor or item:
                        entry = registry.assigned.get((id(module), attr))
                        site = entry[1] if entry is not None and entry[0]() is module else None
                        if item:
                            site = self._made_in(tensor, type(module)) or site
                            problem = f"plain {type(value).__name__}"
                        else:
                            problem = "plain buffer" if attr in buffers else "plain"
                        self.found[(type(module).__name__, attr)] = Unregistered(site, problem, symptom)
                        return
        if len(self._not_held) >= _NOT_HELD:
            self._not_held.clear()
        self._not_held[id(tensor)] = (weakref.ref(tensor), stamp)

    def _made_in(self, tensor: torch.Tensor, holder: type) -> Site | None:
        """The line of ``holder``'s own methods (its class's or a base's) that made the fresh ``tensor``, if a
        factory made it while a module's ``__init__`` ran."""
        made = self._fresh.get(id(tensor))
        if made is None or made[0]() is not tensor or not made[3]:
            return None
        codes = {getattr(function, "__code__", None) for cls in holder.__mro__ for function in vars(cls).values()}
        return next((site for _, code, site in made[3] if code in codes), None)


def _holds(container: list | tuple | dict, tensor: torch.Tensor) -> bool:
    """Whether a plain container holds ``tensor`` itself among its first items."""
    items = container.values() if type(container) is dict else container
    return any(item is tensor for _, item in zip(range(_LOOKED_AT), items))


#: Tensors remembered as held by no module at most (a script reading ``.grad`` of a new plain tensor at every step)
_NOT_HELD = 4096


#: nn.Module's own bookkeeping attributes (``_parameters``, ``_modules`` ...), never a user's container.
_MODULE_STATE = frozenset(vars(nn.Module()).keys())


def _direct(value) -> bool:
    """Whether a list/tuple/dict itself holds modules or Parameters (not only inside nested containers)."""
    items = value.values() if type(value) is dict else value
    return any(isinstance(item, (nn.Module, nn.Parameter)) for item in items)


def _problem(holder: nn.Module, value) -> str | None:
    if isinstance(value, torch.Tensor):
        if not value.requires_grad or isinstance(value, nn.Parameter) or _computed_from_parameters(value):
            return None
        return "tensor"
    if type(value) not in (list, tuple, dict):
        return None
    container = type(value).__name__
    items = _items(value)
    modules = [v for v in items if isinstance(v, nn.Module)]
    params = [v for v in items if isinstance(v, nn.Parameter)]
    if not modules and not params:
        return None
    registered = {id(p) for p in holder.parameters()}  # gathered only for containers of modules or Parameters
    if any(id(p) not in registered for module in modules for p in module.parameters()):
        return f"{container} of modules"
    if any(id(p) not in registered for p in params):  # a list of parameters registered elsewhere is a view
        return container
    return None


def _items(value) -> list:
    """The items of a list, tuple or dict attribute, and of the lists and dicts among them (one level)."""
    items = list(value.values() if type(value) is dict else value)
    for item in list(items):
        if type(item) in (list, tuple, dict):
            items.extend(item.values() if type(item) is dict else item)
    return items


def _held_tensors(value) -> list[torch.Tensor]:
    """The tensors an attribute holds: itself, its items, and the parameters of the modules among them."""
    if isinstance(value, torch.Tensor):
        return [value]
    held: list[torch.Tensor] = []
    for item in _items(value):
        if isinstance(item, torch.Tensor):
            held.append(item)
        elif isinstance(item, nn.Module):
            held.extend(item.parameters())
    return held


def _computed_from_parameters(tensor: torch.Tensor) -> bool:
    """A result kept on the module (``self.loss``, ``self.cache = h``, a weight computed by a
    reparametrisation): its gradient flows on to the Parameters it was computed from."""
    if tensor.grad_fn is None:
        return False
    return any(isinstance(leaf, nn.Parameter) for leaf in graph.leaf_tensors([tensor.grad_fn]))


def constructing_module(frame: Any) -> nn.Module | None:
    """The module whose ``__init__`` runs in ``frame`` or in one of the few user frames above it."""
    for _ in range(4):
        if frame is None or frame_kind(frame.f_code.co_filename) != USER:
            return None
        if frame.f_code.co_name == "__init__":
            module = frame.f_locals.get("self")
            return module if isinstance(module, nn.Module) else None
        frame = frame.f_back
    return None


def _held_at(module: nn.Module, tensor: torch.Tensor) -> tuple[str, bool]:
    """Where ``module`` holds ``tensor``: the dotted path through plain objects, lists and dicts below its
    attributes (``g.edata['w']``), and whether what it holds there is a tensor computed from it (``.to()``)."""
    stack: list[tuple[str, Any, int]] = [(attr, value, 0) for attr, value in vars(module).items()
                                         if not attr.startswith("__") and attr not in _MODULE_STATE]
    while stack:
        path, value, depth = stack.pop()
        if value is tensor:
            return path, False
        if isinstance(value, torch.Tensor):
            if value.grad_fn is not None and any(leaf is tensor for leaf in graph.leaf_tensors([value.grad_fn])):
                return path, True
            continue
        if depth >= 3 or isinstance(value, (nn.Module, type)):
            continue
        if type(value) is dict:
            items = [(f"{path}[{k!r}]", v) for k, v in value.items()]
        elif type(value) in (list, tuple):
            items = [(f"{path}[{i}]", v) for i, v in enumerate(value[:_LOOKED_AT])]
        elif hasattr(value, "__dict__"):
            items = [(f"{path}.{k}", v) for k, v in vars(value).items() if not k.startswith("__")]
        else:
            continue
        stack.extend((where, item, depth + 1) for where, item in items[:_LOOKED_AT])
    return "", False


_LOOKED_AT = 64  # items of one container or object looked into for a Parameter (a dataset held on a module is big)


def _creation_site(registry: WatchRegistry, value) -> Site | None:
    """Where the tensor (or, for a computed one, the leaf it was computed from) was created."""
    for tensor in _held_tensors(value):
        if not isinstance(tensor, torch.Tensor):
            continue
        watched = registry.get(tensor)
        if watched is not None and watched.site is not None:
            return watched.site
        created = registry.created.get(id(tensor))
        if created is not None and created[0]() is tensor:
            return created[1]
        if tensor.grad_fn is not None:
            for leaf in graph.leaf_tensors([tensor.grad_fn]):
                watched = registry.get(leaf)
                if watched is not None and watched.site is not None and not watched.is_parameter:
                    return watched.site
    return None
