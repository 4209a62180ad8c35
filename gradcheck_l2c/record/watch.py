"""Which tensors are watched: what the user asked for, and what the trace knows about each one.

How each one's gradient arrival is noted is `arrival_hooks.py`'s job (a post-accumulate hook, or a read of
``.grad`` after the first backward of a fresh leaf); how they are named, `names.py`'s.
"""
from __future__ import annotations

import os
import sys
import weakref
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Sequence

import torch
from torch import nn
from torch.nn.parameter import UninitializedTensorMixin

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.record.arrival_hooks import Polling, watch_arrivals
from gradcheck_l2c.record.locations import USER, Site, frame_kind
from gradcheck_l2c.record.scope import Clock
from gradcheck_l2c.record.stacks import StackEntry
from gradcheck_l2c.record.torch_internals import MODULE_CALLS, is_parameter


class Owner(NamedTuple):
    """The module attribute a watched tensor sits on, remembered after the module is gone."""

    module: weakref.ref
    attribute: str  # the dotted path below the module (``fc.weight``)
    cls: str  # the module's class
    ident: int  # the module's id while it lived
    holder: int = 0  # the id of the module that directly holds it (``module`` itself, or a submodule)


class _Freed:
    """An object that is gone as soon as it is made."""


#: The reference a watched tensor keeps once its tensor was freed: one dead reference for all (a run that watches a
#: fresh tensor at every step would otherwise keep a dead one per step).
FREED = weakref.ref(_Freed())


class _WatchedRef(weakref.ref):
    """A watched tensor's weak reference, with the id and key its death callback needs: one bound method serves as
    every tensor's callback (a closure per tensor would be made at every step of a loop of fresh leaves)."""

    __slots__ = ("ident", "key")


@dataclass(eq=False, slots=True)
class Watched:
    """What the tracer knows about one watched tensor (slots: a run may watch a fresh tensor at every step)."""

    key: int
    ref: weakref.ref
    shape: tuple[int, ...]
    site: Site | None
    is_parameter: bool
    explicit: bool = False
    user_leaf: bool = False
    owner: Owner | None = None
    variable: str | None = None
    name: str = ""
    aliases: tuple[str, ...] = ()
    got_grad: bool | None = None  # verdict at the last backward that involved it
    ever_grad: bool = False
    nonzero_grad: bool = False
    zero_checks: int = 0
    grad_read: Site | None = None  # user code read .grad and found None or zeros
    cut_read: Site | None = None  # a read that found None or zeros after a backward missed it through a cut
    grad_used: bool = False  # user code read .grad and found a value (a hand-written update, an attack step)
    replaced: bool = False  # a torch layer reparametrised it (weight_norm ...): judged through the new leaves
    copied: bool = False  # copy.deepcopy copied it: a template, judged through its copies
    frozen: bool = False  # requires_grad was switched off after it was watched (and not on again)
    frozen_at: Site | None = None  # the user line that switched it off
    thawed_at: Site | None = None  # a parameter: the last user line that switched it on (``model.requires_grad_()``)
    born: int = 0  # backward calls seen before it was watched
    gone_unused: bool = False  # freed before any backward ran while it lived (a placeholder replaced before training)
    optimizers_before: int = -1  # made during the trace after this many optimizers were built (-1: before it)
    placed: Sequence[tuple[int, Site]] = ()  # `placements.placements`, at the end
    filled: bool = False  # values were copied into it without grad (load_state_dict, copy_)
    rebound: bool = False  # that line assigns a plain name (`model = Net()` again), not an attribute
    built_at: Site | None = None  # made after an optimizer: the line outside module constructors that asked
    joined: Site | None = None  # and the later line of that frame that set its module into another (at the end)
    made_in_forward: bool = False  # the user made it while a module's forward ran (a lazy parameter)
    # a plain leaf made after an optimizer, or a Parameter, in a forward: the line of that forward running then
    forward_line: Site | None = None
    optimized: bool = False  # an optimizer held it (at its construction or at a step())
    stepped_by_script: bool = False  # in no optimizer, yet its values changed after its first gradient
    siblings: tuple[int, ...] = ()  # keys of the parameters of the module that holds it, and of its submodules
    forwards: tuple[Site | None, Site | None] = (None, None)  # forward of that module, and of its parent
    read_in_forward: Site | None = None  # the line where that forward computes with it (``self.<name>.op()``)
    holder: str = ""  # class of the module that holds it
    # that module and those above it: id, class, first call, whether the class's forward is the user's
    calls: tuple[tuple[int, str, Site | None, bool], ...] = ()
    last_reached: int = 0  # the backward call (1-based) that last gave it a gradient
    first_reached: int = 0  # and the one that first did
    hook: Any = None

    @property
    def tensor(self) -> torch.Tensor | None:
        return self.ref()

    def trainable(self) -> bool:
        """Not frozen: by what was recorded when requires_grad changed, or by the tensor while it lives."""
        tensor = self.ref()
        return not self.frozen and (tensor is None or tensor.requires_grad)


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

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self.arrived: list[int] = []  # keys whose gradient arrived during the backward running now
        # user leaves whose arrival hook waits (`arrival_hooks`): not yet through a backward, read from .grad when the
        # running one ends, and through one (the next backward hooks them)
        self.unhooked: list[Watched] = []
        self.checking: list[Watched] = []
        self.outlived: list[Watched] = []
        self.polling = Polling()  # leaves whose arrivals are read from .grad around each backward instead
        self.by_id: dict[int, Watched] = {}  # the live ones
        self.all: list[Watched] = []
        self.died: list[int] = []  # keys whose tensor died since names were last resolved (`unsettled`)
        # key -> the backward that last reached it, while `Watched.last_reached` lags (`arrivals.Arrivals`); and the keys
        # the latest backwards reached together, with the last of them (a model's parameters: one number a step)
        self.reached_at: dict[int, int] = {}
        self.together: tuple[set[int], int] = (set(), 0)
        self._shared: dict[Any, Any] = {}  # `shared`
        self._on_death = self._forget  # every watched tensor's death callback: one bound method, made once
        self.modules: dict[int, tuple[weakref.ref, str | None]] = {}
        # counts what can change names and module attributes (a new watched tensor or module, a name, an attribute
        # set on a module): `discovery` looks at the modules again only when it moved, or a watched tensor died
        self.changes = 0
        self.looked_at = -1
        # Parameters made during the trace: their line, how many optimizers had been built then, and (once
        # one was) the line outside module constructors that asked for it (`locations.built_at`)
        self.created: dict[int, tuple[weakref.ref, Site | None, int, Site | None, bool]] = {}
        # id -> (parameter, line) where user code switched on requires_grad before it was watched (`switched`)
        self.thawed: dict[int, tuple[weakref.ref, Site]] = {}
        # id -> key of the leaves user code asked gradients for: ops taking one first remember their line
        self.user_leaves: dict[int, int] = {}
        # (id(module), attribute) -> (module, line) where user code set a plain tensor or a list/dict attribute
        self.assigned: dict[tuple[int, str], tuple[weakref.ref, Site | None]] = {}
        # id(module) -> (line, id(parent), the user frames then, once an optimizer was built) where user code set
        # it as an attribute of parent; kept after the modules are gone, so that the judge can follow a
        # parameter's modules up to the one to change
        self.placed: dict[int, tuple[Site | None, int, tuple[StackEntry, ...]]] = {}
        # id(module) -> (module, the user line that first called it), while the module lives
        self.called: dict[int, tuple[weakref.ref, Site | None]] = {}
        # id(module) -> the first user line other than that one that called it, in the first iteration (a layer called
        # twice where a sibling of its class is never called: a copy-pasted call)
        self.called_again: dict[int, tuple[weakref.ref, Site | None]] = {}
        # key -> (the module's attribute, a sibling's, the sibling's second line): a parameter whose module was never
        # called while that sibling of its class was, on two lines of their parent's forward (`names`)
        self.instead: dict[int, tuple[str, str, Site]] = {}

    def key_of(self, tensor: Any) -> int | None:
        watched = self.by_id.get(id(tensor))
        if watched is not None and watched.ref() is tensor:
            return watched.key
        return None

    def last_reached(self, watched: Watched) -> int:
        """The backward (1-based) that last gave ``watched`` a gradient; 0 if none did."""
        together, at = self.together
        return max(watched.last_reached, self.reached_at.get(watched.key, 0), at if watched.key in together else 0)

    def get(self, tensor: Any) -> Watched | None:
        watched = self.by_id.get(id(tensor))
        if watched is not None and watched.ref() is tensor:
            return watched
        return None

    def add(self, tensor: torch.Tensor, site: Site | None, *, owner: tuple[nn.Module, str] | None = None,
            explicit: bool = False) -> Watched:
        by_id = self.by_id
        ident = id(tensor)
        existing = by_id.get(ident)
        if existing is not None and existing.ref() is tensor:
            existing.explicit = existing.explicit or explicit
            if owner is not None and existing.owner is None:
                existing.owner = owner_of(*owner)
                self.changes += 1
            return existing
        key = len(self.all)
        shared = self._shared.setdefault
        shape = tuple(tensor.shape)
        # by position (key, ref, shape, site, is_parameter, explicit, user_leaf, owner): a loop may watch a fresh leaf
        # at every step
        reference = _WatchedRef(tensor, self._on_death)
        reference.ident, reference.key = ident, key
        watched = Watched(key, reference, shared(shape, shape),
                          site if site is None else shared((site.file, site.line, site.column), site),
                          is_parameter(tensor), explicit, False, owner_of(*owner) if owner else None)
        self.all.append(watched)
        by_id[ident] = watched
        self.changes += 1
        return watched

    def _forget(self, reference: _WatchedRef) -> None:
        """A watched tensor died: it leaves the live lookups, and its record keeps what it was."""
        ident, key = reference.ident, reference.key
        by_id = self.by_id
        current = by_id.get(ident)
        if current is not None and current.key == key:
            del by_id[ident]
        if self.user_leaves.get(ident) == key:
            del self.user_leaves[ident]
        watched = self.all[key]
        watched.hook = None  # its hooks died with it: nothing left to remove
        watched.ref = FREED
        backwards = self.clock.backwards
        if watched.born == backwards and backwards:  # no backward ran while it lived
            watched.gone_unused = True
        self.died.append(key)

    def shared(self, value: Any, key: Any = None) -> Any:
        """One object for equal values (shapes, lines, names) that many watched tensors record alike."""
        return self._shared.setdefault(value if key is None else key, value)

    def unsettled(self) -> list[Watched]:
        """The watched tensors whose names can still change: the live ones, and those that died since the
        last call (a dead tensor's owner and variable no longer change, so one more naming settles it)."""
        died, self.died[:] = list(self.died), []
        return [*self.by_id.values(), *(self.all[key] for key in died)]

    def note_gone(self) -> None:
        """The first backward runs: what the script already dropped could never have learnt."""
        for watched in self.all:
            watched.gone_unused = watched.ref() is None

    def watch_leaf(self, tensor: torch.Tensor, site: Site | None, owner: tuple[nn.Module, str] | None = None,
                   explicit: bool = False, user_leaf: bool = False, made: bool = True) -> None:
        """Watch a leaf that requires grad; a post-accumulate hook tells when it gets a gradient.

        ``user_leaf``: user code asked for this leaf's gradient by creating it with
        ``requires_grad=True`` — unlike module parameters, which require grad by default; ``made``: created so
        (a factory, a constructor), not switched on later on a value it had (``x.requires_grad_()``), nor made like a
        value with history (``zeros_like(logits, requires_grad=True)``: a canvas to scatter into, not a weight).
        """
        if not (tensor.requires_grad and tensor.is_leaf) or isinstance(tensor, UninitializedTensorMixin):
            return  # a lazy module's parameter has no shape until its first call: watched once discovered after it
        watched = self.add(tensor, site, owner=owner, explicit=explicit)
        if watched.optimizers_before < 0:
            created = self.created.get(id(tensor))
            if created is not None and created[0]() is tensor:
                watched.optimizers_before, watched.built_at, watched.rebound = created[2], created[3], created[4]
            thawed = self.thawed.pop(id(tensor), None) if self.thawed else None
            if thawed is not None and thawed[0]() is tensor:
                watched.thawed_at = thawed[1]
        if user_leaf and not watched.user_leaf:
            watched.user_leaf = True
            self.user_leaves[id(tensor)] = watched.key
            if self.clock.optimizers and made and not watched.is_parameter:
                watched.forward_line = line_in_forward(sys._getframe(1))
        if watched.hook is None:
            watched.born = self.clock.backwards
            watch_arrivals(self, watched, tensor, user_leaf)

    def switched(self, tensor: torch.Tensor, site: Site | None) -> None:
        """User code set ``requires_grad`` of ``tensor`` at ``site`` (None: a plain leaf switched on, not looked up): a
        watched one is frozen or trainable from now on; a parameter switched on before it is watched keeps the line."""
        watched, on = self.get(tensor), tensor.requires_grad
        if watched is not None:
            watched.frozen, watched.frozen_at = not on, None if on else site
            if on and site is not None:
                watched.thawed_at = site
        elif on and site is not None:
            thawed, ident = self.thawed, id(tensor)
            thawed[ident] = (weakref.ref(tensor, lambda _: thawed.pop(ident, None)), site)

    def expect(self, tensor: torch.Tensor, site: Site | None) -> None:
        """User code asserts at ``site`` that ``tensor`` gets a gradient: it is meant to learn, and ``site`` is
        where a missing gradient showed."""
        watched = self.get(tensor)
        if watched is not None:
            watched.explicit = True
            watched.grad_read = watched.grad_read or site

    def unhook(self) -> None:
        """Remove every watched leaf's hook (the trace ends)."""
        for watched in self.all:
            if watched.hook is not None:
                watched.hook.remove()
                watched.hook = None

    def add_module(self, module: nn.Module, variable: str | None = None) -> None:
        entry = self.modules.get(id(module))
        if entry is None or entry[0]() is not module:
            self.modules[id(module)] = (weakref.ref(module), variable)
            self.changes += 1
        elif variable and entry[1] is None:
            self.modules[id(module)] = (entry[0], variable)
            self.changes += 1

    def live_modules(self) -> list[tuple[nn.Module, str | None]]:
        """The modules seen that are still alive; those gone are forgotten (a loop that builds a model per task or
        fold would otherwise walk every earlier one at each discovery)."""
        alive, gone = [], []
        for ident, (ref, variable) in self.modules.items():
            module = ref()
            if module is None:
                gone.append(ident)
            else:
                alive.append((module, variable))
        for ident in gone:
            del self.modules[ident]
        return alive


def line_in_forward(frame: Any) -> Site | None:
    """The line of the user's ``forward`` (past the helpers it calls) that is running under ``frame``, if a module
    call is on the stack: the user frame just inside the innermost module call."""
    inner = None
    while frame is not None:
        code = frame.f_code
        if code.co_name in MODULE_CALLS:
            return None if inner is None else Site(os.path.abspath(inner.f_code.co_filename), inner.f_lineno)
        if frame_kind(code.co_filename) == USER:
            inner = frame
        frame = frame.f_back
    return None


def owner_of(module: nn.Module, attr: str) -> Owner:
    """How a watched tensor remembers the module attribute it sits on, even after the module is gone."""
    path = attr.rpartition(".")[0]
    try:
        holder = module.get_submodule(path) if path else module
    except AttributeError:
        holder = module
    return Owner(weakref.ref(module), attr, type(module).__name__, id(module), id(holder))
