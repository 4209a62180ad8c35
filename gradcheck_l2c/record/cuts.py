"""Where values of watched tensors leave autograd (cuts) and where they come back in as new leaves.

Each cut is an event at the user's line, one per watched tensor it reaches; the values that leave carry
a taint (`taint.py`) naming those events, so that a loss they later reach can tell the whole route.
"""
from __future__ import annotations

import os
import sys
import weakref
from typing import Any, Callable

import torch

from gradcheck_l2c.record import graph, torch_internals
from gradcheck_l2c.record.args import data_items, flat, holds_tensor, inplace_targets, op_label, tensors_in
from gradcheck_l2c.record.entries import entry_ref
from gradcheck_l2c.record.events import Event, EventLog
from gradcheck_l2c.record.graph import grad_fn_of
from gradcheck_l2c.record.library_calls import called_library, library_calls
from gradcheck_l2c.record.locations import (
    DIFFERENTIATORS,
    INITIALISERS,
    OPTIMIZERS,
    USER,
    Site,
    called_from,
    frame_kind,
    in_distributed,
    user_site,
)
from gradcheck_l2c.record.numpy_exits import NumpyExits, numpy_made
from gradcheck_l2c.record.reach import Reachability
from gradcheck_l2c.record.scope import Scope
from gradcheck_l2c.record.settled_exits import SettledExits
from gradcheck_l2c.record.stacks import user_stack
from gradcheck_l2c.record.taint import Taint, TaintStore, fresh
from gradcheck_l2c.record.watch import WatchRegistry

Tensor = torch.Tensor
#: Kinds where constant values come back in as leaves; a second one on the same route adds nothing.
REENTRIES = ("state_dict_reload", "new_parameter", "tensor_rewrap")
#: Library code whose no_grad work on parameters is by design: optimizer updates, initialisers, and the
#: detached copies differentiation APIs make.
_NOT_CUTS = OPTIMIZERS + INITIALISERS + DIFFERENTIATORS
#: Factories that read only the shape, dtype and device of the tensor they are given: no value of it flows into
#: what they make (``torch.randn_like(latent)`` under no_grad cuts nothing; the ``latent + noise`` beside it does).
SHAPE_ONLY = frozenset(getattr(owner, name) for owner, names in (
    (torch, ("empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "randint_like")),
    (Tensor, ("new_empty", "new_zeros", "new_ones", "new_full"))) for name in names if hasattr(owner, name))


class CutRecorder:
    """Records cuts and re-entries as events, and gives the values that left autograd their taint."""

    def __init__(self, registry: WatchRegistry, reach: Reachability, events: EventLog, taints: TaintStore,
                 scope: Scope) -> None:
        self.registry, self.reach, self.events, self.taints, self.scope = registry, reach, events, taints, scope
        self.numpy_exits = NumpyExits(taints, events)  # tainted values that left for NumPy, to tie what comes back
        # tensors rebuilt from a watched leaf under no_grad (`w = w - lr * w.grad`), by id: (tensor, key, line, op)
        self.replacements: dict[int, tuple[weakref.ref, int, Site | None, str]] = {}
        self.settled_exits = SettledExits(reach, taints, events)  # detached values whose weights had all learnt

    def cut(self, kind: str, detail: str, tensors: list[Tensor], site: Site | None = None,
            exclude: frozenset[int] = frozenset(), rebuilt: int | None = None, **extra: Any) -> Taint | None:
        """Values of ``tensors`` leave autograd here: record one event per watched key they reach.

        Returns the taint their results carry: the new cuts plus whatever taint the inputs had. ``site``: the line
        to name; by default the innermost user line, looked up only when a cut is recorded.
        ``rebuilt``: the key of the leaf this op rebuilds (an update step written out of place).
        """
        new: dict[int, Event] = {}
        inherited: Taint | None = None
        around: dict[str, Any] | None = None  # a no_grad cut's callers, looked up once per call
        # keys whose gradient arrived where it was meant to: this cut changed nothing for them (a zero-
        # derivative op also explains exactly-zero gradients that did arrive)
        settled = self.taints.settled if kind != "non_differentiable" else ()
        # a path that already sends back only zeros (through ``torch.normal``'s parameters, a ``round``) loses nothing
        # here: only the keys a nonzero gradient could reach are cut (a zero-derivative op's own cut reaches them all)
        reach = self.reach.carrying if kind != "non_differentiable" and graph.zero_marked else self.reach
        for tensor in tensors:
            inherited = self.taints.merge(inherited, self.taints.get(tensor))
            keys = reach(tensor)
            if exclude:
                keys = keys - exclude
            if settled:
                keys = keys.difference(settled)
            if not keys:
                continue
            if not new and in_distributed(1):
                return inherited  # DDP's own broadcasts and buckets, not the user's code
            if site is None:
                site = user_site(2)
            source = grad_fn_of(tensor)
            for key in keys:
                if key not in new:
                    facts = dict(extra, rebuilds=True) if key == rebuilt else dict(extra)
                    if kind == "no_grad" and not self.events.has(kind, key, site, detail):
                        if around is None:  # where this line's function was called (grad may be off out there), the
                            # library functions on the way, and the one the user's line called (``Normal.sample``)
                            around = {"callers": tuple(s for *_, s in user_stack(2)[1:]), "library": library_calls(2),
                                      "handed": _handed_graph_tensors(), "called": called_library(2)}
                        facts.update(around)
                    new[key] = self.events.record(kind, key, site, detail, source=source, **facts)
        if not new:
            return inherited
        return self.taints.merge(fresh(new), without(inherited, new))

    def differentiated_by_library(self, tensor: Tensor) -> None:
        """``torch.autograd.functional`` or ``gradcheck`` differentiates a detached copy of ``tensor``:
        the leaves it reaches are differentiated, although their own ``.grad`` stays empty."""
        for key in self.reach(tensor):
            watched = self.registry.all[key]
            watched.ever_grad = True
            watched.got_grad = True

    def reparametrised(self, data: Tensor) -> None:
        """A torch layer made a Parameter from a watched tensor's values (``weight_norm``,
        ``spectral_norm``, ``parametrize``): the original is replaced, and judged through the new one."""
        taint = self.taints.get(data)
        keys = set(self.reach(data)) | (set(taint.chains) if taint is not None else set())
        for key in keys:
            self.registry.all[key].replaced = True

    def reenter(self, kind: str, detail: str | Callable[[], str], sources: list[Any], targets: list[Tensor],
                site: Site | None = None, given: dict[str, Any] | None = None, untainted: Taint | None = None) -> None:
        """Values come back in as a leaf (``load_state_dict``, ``copy_`` into a parameter, ...).

        Cuts of live history and earlier chains both get this event appended, and the targets
        carry the result: when they later feed a loss, the whole route is known. ``given``: what a
        rewrap was given, recorded with each event with the cut the values came through. ``detail`` may be a
        function that words it, called only when an event is recorded. ``untainted``: the taint the sources had
        before values without one of their own were made from them (NumPy's ops, `numpy_exits.NumpyExits`).
        """
        live: set[int] = set()
        inherited: Taint | None = None
        taints = self.taints
        for source in sources:
            tensor = isinstance(source, Tensor)
            if not tensor or taints.by_id:  # a tensor's taint is kept by id (it is no TaintedFloat)
                inherited = taints.merge(inherited, taints.get(source))
            if tensor and source.requires_grad:  # else it reaches no watched tensor
                live |= self.reach(source)
        if inherited is None:
            inherited = untainted
        if live or inherited is not None:
            own = frozenset(k for k in map(self.registry.key_of, targets) if k is not None)
            live -= own
            inherited = without(inherited, own)
        if (not live and inherited is None) or in_distributed(1):
            for target in targets:
                self.taints.discard(target)
            return
        if site is None:
            site = user_site(2)
        if callable(detail):
            detail = detail()
        onward = [k for k, c in inherited.chains.items() if c[-1].kind not in REENTRIES] if inherited else []
        events = {}
        for key in live.union(onward):
            facts: dict[str, Any] = {}
            if given is not None:
                before = inherited.chains[key][-1] if key not in live else None
                facts = dict(given, came_from=(before.detail, before.site) if before else None)
            events[key] = self.events.record(kind, key, site, detail, **facts)
        result = fresh({k: events[k] for k in live})
        if inherited is not None:
            result = self.taints.merge(result, self.taints.extend(inherited, {k: events[k] for k in onward}))
        for target in targets:
            self.taints.set(target, result)

    def rewrap(self, label: str, data: Any, out: Tensor, site: Site | None, requires_grad: bool) -> None:
        """A new tensor built from ``data`` (``torch.tensor``, ``from_numpy``, ``Variable``): values with
        history or taint come back in without it; with ``requires_grad`` it is a new leaf to watch."""
        if isinstance(out, Tensor):
            items = data_items(data)
            given = ("tensor" if isinstance(data, Tensor) else "array" if type(data).__module__ == "numpy"
                     else "tensors" if any(isinstance(item, Tensor) for item in items)
                     else "numbers" if type(data) in (list, tuple) else "number")
            # NumPy data made by NumPy's own ops carries no taint: tie it to what left for NumPy in this function
            via_numpy = self.numpy_exits.came_back(2) if self.numpy_exits and numpy_made(items) else None
            self.reenter("tensor_rewrap", label, items, [out], site=site,
                         given={"given": given, "requires_grad": requires_grad}, untainted=via_numpy)
            if requires_grad:
                self.registry.watch_leaf(out, site, user_leaf=True)

    def no_grad_op(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """An op ran with grad disabled on inputs that require grad: what reaches watched tensors is cut here."""
        name = getattr(func, "__name__", "")
        inplace = name.endswith("_") and not name.endswith("__")
        if not inplace and not holds_tensor(out) or func in SHAPE_ONLY:
            return  # a metadata query (.device, .dim()), a factory shaped like its input: no values flow on
        targets = inplace_targets(args) if inplace else []
        inputs = [a for a in tensors_in(args, kwargs) if a.requires_grad]
        exclude = frozenset(k for k in map(self.registry.key_of, targets) if k is not None)
        rebuilt = None if inplace else self._rebuilt(inputs, out)
        taint = self.taints.of_args(args, kwargs)
        if self.scope.custom_forwards and self.scope.captured:
            key_of = self.registry.key_of
            self.scope.captured[-1].update(k for k in (key_of(t) for t in inputs if t.is_leaf) if k is not None)
        if any(self.reach(t) - exclude for t in inputs) and not self.scope.custom_forwards \
                and not called_from(_NOT_CUTS, 1) and not _in_module_apply():
            switched = self.scope.grad_switched_off  # a plain set_grad_enabled(False) left on, maybe elsewhere
            taint = self.taints.merge(taint, self.cut("no_grad", op_label(func), inputs, site=user_site(1),
                                                      exclude=exclude, rebuilt=rebuilt,
                                                      **({"switched": switched} if switched else {})))
        if not inplace:
            self.taints.mark(out, taint)
            if rebuilt is not None:
                self._remember_replacement(func, out, rebuilt)
            return
        taint = without(taint, exclude)
        for target in targets:
            self.taints.assign(target, taint)

    def function_ran(self, function: type, args: tuple, used: set[int]) -> None:
        """A custom ``autograd.Function``'s forward (a reentrant checkpoint's too) used watched leaves that
        were not among its inputs: autograd gives them no gradient through it, unless its backward runs a
        graph of its own (a checkpoint's recomputation); cut here if they never get one."""
        passed = {k for k in map(self.registry.key_of, (a for a in flat(args) if isinstance(a, Tensor))) if k is not None}
        tensors = [t for t in (self.registry.all[k].tensor for k in used - passed) if t is not None]
        if tensors:
            self.cut("no_grad", f"{function.__name__}.forward", tensors, site=user_site(2), function=True)

    def _rebuilt(self, inputs: list[Tensor], out: Any) -> int | None:
        """``w = w - lr * w.grad`` under no_grad: the key of the watched leaf that a new tensor shaped like
        it, without history, replaces."""
        if not isinstance(out, Tensor) or out.requires_grad:
            return None
        for tensor in inputs:
            key = self.registry.key_of(tensor)
            if key is not None and tensor.shape == out.shape:
                return key
        return None

    def _remember_replacement(self, func: Any, out: Tensor, key: int) -> None:
        """Kept (weakly) so that a later backward error or ``.grad`` read on the new tensor can name this line,
        even after the leaf's own taint stopped mattering because it got gradients before."""
        ident = id(out)
        replacements = self.replacements
        ref = entry_ref(out, replacements, ident)
        replacements[ident] = (ref, key, user_site(3), op_label(func))

    def replacement_of(self, obj: Any) -> Taint | None:
        """The cut behind a tensor rebuilt from a watched leaf under no_grad, as a one-event taint."""
        entry = self.replacements.get(id(obj))
        if entry is None or entry[0]() is not obj:
            return None
        _, key, site, label = entry
        return fresh({key: self.events.record("no_grad", key, site, label, rebuilds=True)})


def without(taint: Taint | None, keys: Any) -> Taint | None:
    """The taint less the chains of ``keys`` (a tensor's own key: its values cannot cut it from itself)."""
    if taint is None or not any(k in taint.chains for k in keys):
        return taint
    chains = {k: c for k, c in taint.chains.items() if k not in keys}
    return Taint(chains) if chains else None


def _in_module_apply() -> bool:
    """Whether a module's ``_apply`` (``model.to(device)``, ``.half()``) is on the stack between here and
    user code: it writes its results back into the same parameters, no cut."""
    frame = sys._getframe(2)
    module_file = os.path.join("torch", "nn", "modules", "module.py")
    while frame is not None and frame_kind(frame.f_code.co_filename) != USER:
        code = frame.f_code
        if code.co_name == torch_internals.MODULE_APPLY and code.co_filename.endswith(module_file):
            return True
        frame = frame.f_back
    return False


def _handed_graph_tensors() -> tuple[bool, ...]:
    """For the cut's own user frame and each one above it, innermost first (``callers`` less its first): whether its
    function was called with a tensor that requires grad among its arguments (a pipeline handed the tensor to
    optimise, which a ``@torch.no_grad()`` on it cuts at the call), read from the running frames."""
    frames, frame = [], sys._getframe(1)
    while frame is not None:
        if frame_kind(frame.f_code.co_filename) == USER:
            frames.append(frame)
        frame = frame.f_back
    handed = []
    for frame in frames:
        code, values = frame.f_code, frame.f_locals
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        handed.append(any(isinstance(values.get(name), Tensor) and values[name].requires_grad for name in names))
    return tuple(handed)
