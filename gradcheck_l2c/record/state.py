"""What one trace has learned so far: watched tensors, events, taints, backward verdicts.

The interceptor and the patches report raw facts here; `judge` turns them into findings.
"""
from __future__ import annotations

import os
import sys
import threading
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn

from gradcheck_l2c.record import graph, unregistered
from gradcheck_l2c.record.events import Event, EventLog
from gradcheck_l2c.record.ddp import DdpLog
from gradcheck_l2c.record.locations import (
    DIFFERENTIATORS,
    INITIALISERS,
    OPTIMIZERS,
    USER,
    Site,
    called_from,
    frame_kind,
    in_distributed,
    user_frame,
    user_site,
)
from gradcheck_l2c.record.taint import Chain, Taint, TaintStore, fresh
from gradcheck_l2c.record.watch import WatchRegistry, WatchSpec, name_variables, owner_of

Tensor = torch.Tensor
_REACH = "gradcheck_reach"
#: Kinds where constant values come back in as leaves; a second one on the same route adds nothing.
REENTRIES = ("state_dict_reload", "new_parameter", "tensor_rewrap")
MAX_GRAPHS = 8
#: Library code whose no_grad work on parameters is by design: optimizer updates, initialisers, and the
#: detached copies differentiation APIs make.
_NOT_CUTS = OPTIMIZERS + INITIALISERS + DIFFERENTIATORS


@dataclass
class Snapshot:
    """A ``state_dict()`` entry that shares storage with a live parameter."""

    key: int
    site: Site | None
    version: int


@dataclass
class OptimizerRecord:
    """An optimizer used during the trace: its class, where it was built (or first stepped, when it
    was built before the trace), which tensors it was given and the watched keys among them."""

    name: str
    site: Site | None
    params: list[weakref.ref]
    optimizer: weakref.ref
    keys: set[int] = field(default_factory=set)
    step_site: Site | None = None  # where its latest step() was called
    step_order: int = -1  # when, on the trace's count of steps
    marked: tuple[int, int] = (-1, -1)  # (watched tensors, param groups) when its parameters were last marked
    created: int = 0  # the count of steps when it was built
    reached: set[int] = field(default_factory=set)  # watched keys backward reached since its latest step
    known: int = 0  # how many tensors were watched when it was built: later keys were made after it
    _ids: set[int] = field(default_factory=set)
    _groups: int = -1

    def holds(self, tensor: Tensor) -> bool:
        """Whether it holds ``tensor``, counting groups added later with ``add_param_group``."""
        optimizer = self.optimizer()
        if optimizer is not None and len(optimizer.param_groups) != self._groups:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            self.params = [weakref.ref(p) for p in params]
            self._ids = {id(p) for p in params}
            self._groups = len(optimizer.param_groups)
        if id(tensor) not in self._ids:
            return False
        return any(ref() is tensor for ref in self.params)


@dataclass
class StepMiss:
    """A tensor that an optimizer stepped without a gradient, although a loss since its previous step
    reached the tensor's values through a cut: the cut kept that gradient from the step."""

    optimizer: str
    site: Site | None  # the first such step() call
    steps: int = 0
    chains: dict[Chain, int] = field(default_factory=dict)


@dataclass
class PendingGraph:
    """A backward's graph in which watched tensors got no gradient, kept until findings exist."""

    root: Any
    missing: tuple[int, ...]
    chains: dict[int, list[Chain]]
    reentry: dict[int, list[Any]]  # id(event) -> graph nodes where tainted values came back in
    signature: int


@dataclass
class TraceState:
    spec: WatchSpec
    record_sites: bool = False
    registry: WatchRegistry = field(default_factory=WatchRegistry)
    events: EventLog = field(default_factory=EventLog)
    taints: TaintStore = field(default_factory=TaintStore)
    backward_count: int = 0
    events_at_backward: int = 0  # events recorded before the last backward ended
    reached_now: list[int] = field(default_factory=list)
    missed: dict[int, dict[Chain, int]] = field(default_factory=dict)
    # per training step: keys missed by a backward since an optimizer holding them last stepped, the live
    # optimizers (by id), keys some step found with their gradient, and keys stepped without it
    unstepped_misses: dict[int, set[Chain]] = field(default_factory=dict)
    stepping: dict[int, OptimizerRecord] = field(default_factory=dict)
    stepped_keys: set[int] = field(default_factory=set)
    step_misses: dict[int, StepMiss] = field(default_factory=dict)
    read_missing: list[tuple[Site | None, str, bool, Any]] = field(default_factory=list)
    dead_ends: list[Taint] = field(default_factory=list)  # values whose every path was cut
    graphless: list[Site | None] = field(default_factory=list)  # backwards that raised "does not require grad"
    # (module class, attribute) -> (site, problem, symptom): tensors a module holds unregistered
    unregistered: dict[tuple[str, str], tuple[Site | None, str, Site | None]] = field(default_factory=dict)
    replacements: dict[int, tuple[weakref.ref, int, Site | None, str]] = field(default_factory=dict)
    snapshots: dict[int, tuple[weakref.ref, Snapshot]] = field(default_factory=dict)
    optimizers: list[OptimizerRecord] = field(default_factory=list)
    inplace_log: deque = field(default_factory=lambda: deque(maxlen=256))
    steps: int = 0  # optimizer.step() calls seen
    graphs: list[PendingGraph] = field(default_factory=list)
    graph_signatures: set[int] = field(default_factory=set)
    pid: int = field(default_factory=os.getpid)
    thread: int = field(default_factory=threading.get_ident)  # the traced thread
    # backward passes run by other threads, which the trace does not cover: (thread, site) -> count
    untraced: dict[tuple[str, Site | None], int] = field(default_factory=dict)
    _untraced_lock: Any = field(default_factory=threading.Lock)
    module_path: list[str] = field(default_factory=list)  # with record_sites: the modules running now
    consumers: dict[int, str] = field(default_factory=dict)  # watched key -> op that takes the leaf
    custom_forward: int = 0  # depth of custom autograd.Function forwards (grad is off there by design)
    quiet: bool = False  # torch's own optimizer code is running (zero_grad, a step without closure): nothing to see
    inplace_seen: dict[tuple[Site | None, str], list] = field(default_factory=dict)  # -> [keys, count]
    ddp: DdpLog = field(default_factory=DdpLog)  # DistributedDataParallel wrappers and their errors
    # set by the front door: adds what the trace knows to a backward's RuntimeError (judge stage)
    explain_backward_error: Callable[[TraceState, RuntimeError, list[Tensor]], None] | None = None

    def in_trace_thread(self) -> bool:
        """Whether the calling thread is the one the trace covers."""
        return threading.get_ident() == self.thread

    def untraced_backward(self, thread: str, site: Site | None) -> None:
        """A backward pass ran in another thread (called from that thread)."""
        with self._untraced_lock:
            self.untraced[thread, site] = self.untraced.get((thread, site), 0) + 1

    # ---- watching -------------------------------------------------------------------------

    def watch_leaf(self, tensor: Tensor, site: Site | None, owner: tuple[nn.Module, str] | None = None,
                   explicit: bool = False, user_leaf: bool = False) -> None:
        """Watch a leaf that requires grad; a post-accumulate hook tells when it gets a gradient.

        ``user_leaf``: user code asked for this leaf's gradient by creating it with
        ``requires_grad=True`` — unlike module parameters, which require grad by default.
        """
        if not (tensor.requires_grad and tensor.is_leaf):
            return
        watched = self.registry.add(tensor, site, owner=owner, explicit=explicit)
        if user_leaf and not watched.user_leaf:
            watched.user_leaf = True
            self.registry.user_leaves[id(tensor)] = watched.key
        if watched.hook is None:
            watched.born = self.backward_count
            reached = self.reached_now
            key = watched.key
            watched.hook = tensor.register_post_accumulate_grad_hook(lambda _t, key=key: reached.append(key))

    def discover(self, frame: Any) -> None:
        """Learn modules and variable names from the user frames on the stack (cheap, no copies)."""
        registry = self.registry
        while frame is not None:
            if frame_kind(frame.f_code.co_filename) == USER:
                for name, value in frame.f_locals.items():
                    if isinstance(value, nn.Module):
                        if id(value) not in registry.modules:
                            for pname, param in value.named_parameters():
                                self.watch_leaf(param, None, owner=(value, pname))
                        registry.add_module(value, name if name != "self" else None)
                name_variables(registry, frame.f_locals)
            frame = frame.f_back
        self.adopt_attributes()
        registry.resolve_names()
        unregistered.collect(self)

    def adopt_attributes(self) -> None:
        """Name watched non-parameter tensors after the module attribute that holds them."""
        registry = self.registry
        for module, _ in registry.live_modules():
            for attr, value in vars(module).items():
                if isinstance(value, Tensor) and not attr.startswith("_"):
                    watched = registry.get(value)
                    if watched is not None and watched.owner is None:
                        watched.owner = owner_of(module, attr)

    # ---- reachability ---------------------------------------------------------------------

    def reach(self, tensor: Tensor) -> frozenset[int]:
        """Watched keys whose leaves are reachable from ``tensor`` through live autograd history."""
        if not tensor.requires_grad:
            return frozenset()
        node = grad_fn_of(tensor)
        if node is None:
            key = self.registry.key_of(tensor)
            if key is None and isinstance(tensor, nn.Parameter):
                key = self.adopt(tensor)
            return frozenset() if key is None else frozenset((key,))
        metadata = node.metadata
        cached = metadata.get(_REACH)
        if cached is not None:
            return cached
        key_of = self.registry.key_of
        keys = set()
        for child in graph.iter_nodes([node], graph.SAFE_WALK):
            variable = getattr(child, "variable", None)
            if variable is not None:
                key = key_of(variable)
                if key is None and isinstance(variable, nn.Parameter):
                    key = self.adopt(variable)
                if key is not None:
                    keys.add(key)
        result = frozenset(keys)
        metadata[_REACH] = result
        return result

    def adopt(self, param: Tensor) -> int | None:
        """A parameter of a module made before the trace (a pytest fixture, an earlier notebook cell)
        turns up on a cut path: watch it from now on, as if the module had been built here."""
        self.watch_leaf(param, None)
        return self.registry.key_of(param)

    # ---- cuts -----------------------------------------------------------------------------

    def cut(self, kind: str, detail: str, tensors: list[Tensor], site: Site | None = None,
            exclude: frozenset[int] = frozenset(), **extra: Any) -> Taint | None:
        """Values of ``tensors`` leave autograd here: record one event per watched key they reach.

        Returns the taint their results carry: the new cuts plus whatever taint the inputs had.
        """
        new: dict[int, Event] = {}
        inherited: Taint | None = None
        # keys whose gradient arrived where it was meant to: this cut changed nothing for them (a zero-
        # derivative op also explains exactly-zero gradients that did arrive)
        settled = self.taints.settled if kind != "non_differentiable" else ()
        for tensor in tensors:
            inherited = self.taints.merge(inherited, self.taints.get(tensor))
            keys = self.reach(tensor) - exclude
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
                    new[key] = self.events.record(kind, key, site, detail, source=source, **extra)
        if not new:
            return inherited
        return self.taints.merge(fresh(new), _without(inherited, new))

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

    def relabel(self, taint: Taint | None, kind: str, label: str, site: Site | None) -> Taint | None:
        """A cut made on this very line (``x.detach().numpy()``) is reported as the later step's kind."""
        if taint is None:
            return None
        chains = {}
        for key, chain in taint.chains.items():
            last = chain[-1]
            if last.site == site and last.kind in ("detach", "data_attr"):
                event = self.events.record(kind, key, site, last.detail + label, source=last.source)
                chain = chain[:-1] + (event,)
            chains[key] = chain
        return Taint(chains)

    def reenter(self, kind: str, detail: str, sources: list[Any], targets: list[Tensor],
                site: Site | None = None) -> None:
        """Values come back in as a leaf (``load_state_dict``, ``copy_`` into a parameter, ...).

        Cuts of live history and earlier chains both get this event appended, and the targets
        carry the result: when they later feed a loss, the whole route is known.
        """
        own = frozenset(k for k in (self.registry.key_of(t) for t in targets) if k is not None)
        live: set[int] = set()
        inherited: Taint | None = None
        for source in sources:
            inherited = self.taints.merge(inherited, self.taints.get(source))
            if isinstance(source, Tensor):
                live |= self.reach(source)
        live -= own
        inherited = _without(inherited, own)
        if (not live and inherited is None) or in_distributed(1):
            for target in targets:
                self.taints.discard(target)
            return
        if site is None:
            site = user_site(2)
        target_key = next(iter(own), None)
        onward = [k for k, c in inherited.chains.items() if c[-1].kind not in REENTRIES] if inherited else []
        events = {key: self.events.record(kind, key, site, detail, target=target_key)
                  for key in live.union(onward)}
        result = fresh({k: events[k] for k in live})
        if inherited is not None:
            result = self.taints.merge(result, self.taints.extend(inherited, {k: events[k] for k in onward}))
        for target in targets:
            self.taints.set(target, result)

    def rewrap(self, label: str, data: Any, out: Tensor, site: Site | None, requires_grad: bool) -> None:
        """A new tensor built from ``data`` (``torch.tensor``, ``from_numpy``, ``Variable``): values with
        history or taint come back in without it; with ``requires_grad`` it is a new leaf to watch."""
        if isinstance(out, Tensor):
            items = _data_items(data)
            self.reenter("tensor_rewrap", label, items, [out], site=site)
            taint = self.taints.get(out)
            if taint is not None:  # what was given, so that the fix fits this line
                given = ("tensor" if isinstance(data, Tensor) else "array" if type(data).__module__ == "numpy"
                         else "tensors" if any(isinstance(item, Tensor) for item in items)
                         else "numbers" if type(data) in (list, tuple) else "number")
                for chain in taint.chains.values():
                    event = chain[-1]
                    if event.kind == "tensor_rewrap" and "given" not in event.extra:
                        before = chain[-2] if len(chain) > 1 else None
                        event.extra.update(given=given, requires_grad=requires_grad,
                                           came_from=(before.detail, before.site) if before else None)
            if requires_grad:
                self.watch_leaf(out, site, user_leaf=True)

    def no_grad_op(self, func: Any, args: tuple, kwargs: dict, out: Any) -> None:
        """An op ran with grad disabled on inputs that require grad: what reaches watched tensors is cut here."""
        name = getattr(func, "__name__", "")
        inplace = name.endswith("_") and not name.endswith("__")
        if not inplace and not _holds_tensor(out):
            return  # a metadata query (.device, .dim()): no values flow on
        targets = _inplace_targets(args) if inplace else []
        inputs = [a for a in tensors_in(args, kwargs) if a.requires_grad]
        exclude = frozenset(k for k in map(self.registry.key_of, targets) if k is not None)
        taint = self.taints.of_args(args, kwargs)
        if any(self.reach(t) - exclude for t in inputs) and not self.custom_forward \
                and not called_from(_NOT_CUTS, 1) and not _in_module_apply():
            taint = self.taints.merge(taint, self.cut("no_grad", op_label(func), inputs, site=user_site(1),
                                                      exclude=exclude))
        if not inplace:
            self.taints.mark(out, taint)
            self._remember_replacement(func, inputs, out, taint)
            return
        taint = _without(taint, exclude)
        for target in targets:
            self.taints.assign(target, taint)

    def inplace_write(self, target: Tensor, site: Site | None, label: str) -> None:
        """An in-place write in grad mode on a tensor with history: autograd records it, so it does
        not cut the path; kept as a note for the tensors whose gradient then goes missing anyway.

        The graph is walked once per place and operation, not once per call.
        """
        seen = self.inplace_seen.get((site, label))
        if seen is None:
            self.inplace_seen[(site, label)] = [self.reach(target), 1]
        else:
            seen[1] += 1

    def _remember_replacement(self, func: Any, inputs: list[Tensor], out: Any, taint: Taint | None) -> None:
        """``w = w - lr * w.grad`` under no_grad: a new tensor shaped like a watched leaf, without history.

        Kept (weakly) so that a later backward error or ``.grad`` read on it can name this line, even
        after the leaf's own taint stopped mattering because it got gradients before.
        """
        if not isinstance(out, Tensor) or out.requires_grad:
            return
        for tensor in inputs:
            key = self.registry.key_of(tensor)
            if key is not None and tensor.shape == out.shape:
                ident = id(out)
                replacements = self.replacements
                ref = weakref.ref(out, lambda _, ident=ident: replacements.pop(ident, None))
                replacements[ident] = (ref, key, user_site(2), op_label(func))
                chain = taint.chains.get(key, ()) if taint is not None else ()
                if chain and chain[-1].kind == "no_grad":
                    chain[-1].extra["rebuilds"] = True  # worded as an update step: "update it in place"
                return

    def replacement_of(self, obj: Any) -> Taint | None:
        """The cut behind a tensor rebuilt from a watched leaf under no_grad, as a one-event taint."""
        entry = self.replacements.get(id(obj))
        if entry is None or entry[0]() is not obj:
            return None
        _, key, site, label = entry
        event = self.events.record("no_grad", key, site, label)
        event.extra["rebuilds"] = True
        return fresh({key: event})

    # ---- judging ----------------------------------------------------------------------------

    def judge_backward(self, roots: list[Tensor], inputs: set[int] | None, frame: Any,
                       returned: set[int] = frozenset()) -> None:
        """After a backward: which watched tensors were reached, and which got values only via cuts.

        ``inputs``: the keys a ``backward(inputs=...)`` or ``autograd.grad`` differentiates (the others
        are left alone on purpose); ``returned``: those ``autograd.grad`` gave a gradient to, which it
        returns instead of filling ``.grad``.
        """
        self.backward_count += 1
        self.events_at_backward = len(self.events)
        registry = self.registry
        # the accumulate hook fires even when a custom Function's backward returned None for the leaf
        with torch._C.DisableTorchFunction():  # the tool's own `.grad` reads
            reached = {key for key in self.reached_now if _has_grad(registry.all[key].tensor)} | returned
        self.reached_now.clear()
        if reached and self.stepping:
            for ident, record in list(self.stepping.items()):
                if record.optimizer() is None:
                    del self.stepping[ident]
                else:
                    record.reached |= reached
        if self.backward_count <= 3:
            for key in self._note_consumers(roots) - reached:
                if not registry.all[key].ever_grad and (inputs is None or key in inputs):
                    registry.all[key].got_grad = False
        for key in reached:
            watched = registry.all[key]
            watched.got_grad = True
            watched.last_reached = self.backward_count
            if not watched.ever_grad:
                watched.ever_grad = True
                if not any(key in record.keys for record in self.stepping.values()):
                    self.taints.settle(key)  # else once a step finds its gradient (judge_step)
                self._check_optimized(watched)
            if watched.zero_checks < 2 and not watched.nonzero_grad:
                tensor = watched.tensor
                if tensor is not None and tensor.grad is not None:
                    watched.zero_checks += 1
                    watched.nonzero_grad = _nonzero(tensor.grad)
        if inputs is None and len(roots) == 1 and roots[0].grad_fn is not None:
            # every leaf this backward could reach has fired its hook: later `.item()` calls on this
            # loss need no graph walk
            roots[0].grad_fn.metadata.setdefault(_REACH, frozenset(reached))
        if self.backward_count <= 3 or self.backward_count % 50 == 0:
            self.discover(frame)
        taint = None
        for root in roots:
            taint = self.taints.merge(taint, self.taints.get(root))
        if taint is None:
            return
        missing: dict[int, list[Chain]] = {}
        for key, chain in taint.chains.items():
            if key in reached or (inputs is not None and key not in inputs):
                continue
            watched = registry.all[key]
            if not watched.ever_grad:
                watched.got_grad = False
            seen = self.missed.setdefault(key, {})
            seen[chain] = seen.get(chain, 0) + 1
            self.unstepped_misses.setdefault(key, set()).add(chain)
            missing.setdefault(key, []).append(chain)
        if missing:
            self._capture(roots, missing)

    def optimizer_record(self, optimizer: Any, site: Site | None) -> OptimizerRecord:
        """The record of ``optimizer``, made now if it was built before the trace; its watched
        parameters are marked as meant to learn (this outlives them)."""
        record = self.stepping.get(id(optimizer))  # every live optimizer's record is there
        if record is None or record.optimizer() is not optimizer:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            record = OptimizerRecord(type(optimizer).__name__, site, [weakref.ref(p) for p in params],
                                     weakref.ref(optimizer), known=len(self.registry.all))
            self.optimizers.append(record)
            self.stepping[id(optimizer)] = record
        now = (len(self.registry.all), len(optimizer.param_groups))
        if record.marked != now:  # something new to mark since the last time
            record.marked = now
            params = [p for group in optimizer.param_groups for p in group["params"]]
            record.params = [weakref.ref(p) for p in params]
            get = self.registry.get
            for param in params:
                watched = get(param)
                if watched is not None:
                    watched.optimized = True
                    record.keys.add(watched.key)
        return record

    def judge_step(self, record: OptimizerRecord, site: Site | None) -> bool:
        """At ``optimizer.step()``: which tensors it holds got their gradient for this step. One that a
        backward since its previous step missed through a cut, and that has no gradient now, is stepped
        without the gradient that loss meant to give it (a GAN's generator step on a detached fake,
        whose other gradients were cleared before the step). Returns whether this step had such a tensor.

        Only the tensors that were reached or missed since the previous step are looked at, and each
        only until one step found its gradient: correct programs pay a few set operations per step."""
        reached, record.reached = record.reached, set()
        pending = self.unstepped_misses
        missed = [key for key in pending if key in record.keys] if pending else []
        candidates = ((reached & record.keys) - self.stepped_keys).union(missed)
        found = False
        for key in candidates:
            chains = pending.pop(key, None)
            if key in self.stepped_keys:
                continue
            tensor = self.registry.all[key].tensor
            grad = tensor.grad if tensor is not None else None
            # zeros count as a gradient only when backward reached it and no cut missed it since the
            # last step (zero_grad(set_to_none=False) leaves zeros, which are no gradient)
            if grad is not None and ((key in reached and not chains) or _nonzero(grad)):
                self.stepped_keys.add(key)
                self.step_misses.pop(key, None)
                self.taints.settle(key)  # its cuts no longer matter: they need not travel further
                continue
            if chains:
                miss = self.step_misses.get(key)
                if miss is None:
                    miss = self.step_misses[key] = StepMiss(record.name, site)
                miss.steps += 1
                for chain in chains:
                    miss.chains[chain] = miss.chains.get(chain, 0) + 1
                found = True
        return found

    def _check_optimized(self, watched: Any) -> None:
        """A parameter's first gradient: is any optimizer going to use it? (Checked now, while it lives.)"""
        tensor = watched.tensor
        if watched.is_parameter and self.optimizers and tensor is not None \
                and not any(record.holds(tensor) for record in self.optimizers):
            self.events.record("optimizer", watched.key, watched.site, "none")

    def _note_consumers(self, roots: list[Tensor]) -> set[int]:
        """Which op consumes each watched leaf in this graph (the one to blame if no gradient arrives);
        returns the keys of the watched leaves in the graph."""
        key_of = self.registry.key_of
        found = set()
        for node in graph.iter_nodes(graph.grad_roots([r for r in roots if r.requires_grad]), graph.SAFE_WALK):
            for child, _ in node.next_functions:
                variable = getattr(child, "variable", None) if child is not None else None
                key = key_of(variable) if variable is not None else None
                if key is not None:
                    self.consumers.setdefault(key, type(node).__name__)
                    found.add(key)
        return found

    def _capture(self, roots: list[Tensor], missing: dict[int, list[Chain]]) -> None:
        if len(self.graphs) >= MAX_GRAPHS:
            return
        nodes = graph.grad_roots([r for r in roots if r.requires_grad])
        if not nodes:
            return
        root = nodes[0]
        signature = hash((graph.signature(root, graph.SAFE_WALK), tuple(sorted(missing))))
        if signature in self.graph_signatures:
            return
        self.graph_signatures.add(signature)
        reentry: dict[int, list[Any]] = {}
        get = self.taints.get
        for node in graph.iter_nodes([root], graph.SAFE_WALK):
            variable = getattr(node, "variable", None)
            taint = get(variable) if variable is not None else None
            if taint is None:
                continue
            for key, chain in taint.chains.items():
                if key in missing:
                    reentry.setdefault(id(chain[-1]), []).append(node)
        self.graphs.append(PendingGraph(root, tuple(missing), missing, reentry, signature))

    def grad_read(self, tensor: Tensor, value: Any) -> None:
        """User code read ``.grad``: a None or all-zero value there is a gradient they expected."""
        if value is not None:
            watched = self.registry.get(tensor)
            if watched is None or watched.nonzero_grad:
                return
            nonzero = _nonzero(value)
            watched.nonzero_grad = watched.nonzero_grad or nonzero
            if nonzero:
                return
        site = user_site(2)
        watched = self.registry.get(tensor)
        if watched is not None:
            watched.grad_read = watched.grad_read or site
            if watched.variable is None and watched.owner is None:
                frame = user_frame(2)
                if frame is not None:
                    name_variables(self.registry, frame.f_locals)
            return
        taint = self.taints.get(tensor) or self.replacement_of(tensor)
        if tensor.is_leaf and taint is not None:
            self.dead_ends.append(taint)
        elif tensor.is_leaf and not tensor.requires_grad:
            self.plain_attribute(tensor, site)
        elif not tensor.is_leaf:
            frame = user_frame(2)
            name = _variable_name(frame, tensor) if frame is not None else None
            self.read_missing.append((site, name or "tensor", tensor.is_leaf, tensor.grad_fn))

    def plain_attribute(self, tensor: Tensor, symptom: Site | None) -> None:
        """A tensor that never required grad was treated as learnable (its ``.grad`` read, or handed to
        an optimizer): if a module holds it as a plain attribute, that assignment is the bug."""
        registry = self.registry
        for root, _ in registry.live_modules():
            for module in root.modules():
                for attr, value in vars(module).items():
                    if value is tensor and not attr.startswith("_"):
                        entry = registry.assigned.get((id(module), attr))
                        site = entry[1] if entry is not None and entry[0]() is module else None
                        self.unregistered[(type(module).__name__, attr)] = (site, "plain", symptom)
                        return

    # ---- state_dict snapshots -----------------------------------------------------------------

    def snapshot(self, param: Tensor, out: Tensor) -> None:
        key = self.registry.key_of(param)
        if key is None:
            return
        ident = id(out)
        snapshots = self.snapshots
        ref = weakref.ref(out, lambda _, ident=ident: snapshots.pop(ident, None))
        snapshots[ident] = (ref, Snapshot(key, user_site(2), out._version))

    def check_snapshots(self, func: Any, args: tuple) -> None:
        """A stale ``state_dict()`` entry is used: its parameter changed since the snapshot."""
        snapshots = self.snapshots
        for arg in _flat(args):
            entry = snapshots.get(id(arg))
            if entry is None or entry[0]() is not arg:
                continue
            snap = entry[1]
            if arg._version != snap.version:
                self.events.record("state_dict_alias", snap.key, user_site(2), op_label(func),
                                   snapshot=snap.site)
                snap.version = arg._version


def _without(taint: Taint | None, keys: Any) -> Taint | None:
    if taint is None or not any(k in taint.chains for k in keys):
        return taint
    chains = {k: c for k, c in taint.chains.items() if k not in keys}
    return Taint(chains) if chains else None


def _flat(args: tuple):
    for arg in args:
        if type(arg) in (list, tuple):
            yield from arg
        else:
            yield arg


def _data_items(data: Any, limit: int = 10_000) -> list[Any]:
    """The leaves (tensors, numbers, arrays) of the nested lists and tuples given to ``torch.tensor``."""
    items: list[Any] = []
    stack = [data]
    while stack and len(items) < limit:
        item = stack.pop()
        if type(item) in (list, tuple):
            stack.extend(item)
        else:
            items.append(item)
    return items


def tensors_in(args: tuple, kwargs: dict | None) -> list[Tensor]:
    found = [a for a in _flat(args) if isinstance(a, Tensor)]
    if kwargs:
        found.extend(v for v in kwargs.values() if isinstance(v, Tensor))
    return found


def _inplace_targets(args: tuple) -> list[Tensor]:
    if not args:
        return []
    first = args[0]
    if isinstance(first, Tensor):
        return [first]
    if type(first) in (list, tuple):
        return [t for t in first if isinstance(t, Tensor)]
    return []


def grad_fn_of(tensor: Tensor) -> Any:
    """``tensor.grad_fn``, or None where PyTorch refuses to build it: a view made under no_grad whose
    base was then written in place (``nn.Embedding``'s padding row) raises on the attribute read."""
    try:
        return tensor.grad_fn
    except RuntimeError:
        return None


def _in_module_apply() -> bool:
    """Whether a module's ``_apply`` (``model.to(device)``, ``.half()``) is on the stack between here and
    user code: it writes its results back into the same parameters, no cut."""
    frame = sys._getframe(2)
    while frame is not None and frame_kind(frame.f_code.co_filename) != USER:
        code = frame.f_code
        if code.co_name == "_apply" and code.co_filename.endswith(os.path.join("torch", "nn", "modules", "module.py")):
            return True
        frame = frame.f_back
    return False


def _nonzero(tensor: Tensor) -> bool:
    """Whether a gradient (dense or sparse) holds anything but zeros; the tool's own read, not intercepted."""
    with torch._C.DisableTorchFunction():
        return bool(tensor.any())


def _has_grad(tensor: Tensor | None) -> bool:
    return tensor is not None and tensor.grad is not None


def _holds_tensor(out: Any) -> bool:
    return isinstance(out, Tensor) or (isinstance(out, (list, tuple)) and any(isinstance(o, Tensor) for o in out))


def op_label(func: Any) -> str:
    name = getattr(func, "__name__", repr(func))
    if name in ("__get__", "__set__"):
        name = getattr(getattr(func, "__self__", None), "__name__", name)
    return name


def _variable_name(frame: Any, tensor: Tensor) -> str | None:
    for name, value in frame.f_locals.items():
        if value is tensor:
            return name
    return None


