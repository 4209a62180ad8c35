"""What each backward reached and missed, which op consumes each watched leaf, and the graphs to draw;
and what user code found when it read a ``.grad``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import torch

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.arrivals import Arrivals
from gradcheck_l2c.record.code_lines import named_object
from gradcheck_l2c.record.cuts import CutRecorder
from gradcheck_l2c.record.empty_reads import EmptyReads
from gradcheck_l2c.record.events import EventLog
from gradcheck_l2c.record.function_sites import functions_before, user_backward_return
from gradcheck_l2c.record.gradient_gates import Gate
from gradcheck_l2c.record.locations import Site, user_frame, user_site
from gradcheck_l2c.record.names import name_variables, variable_name
from gradcheck_l2c.record.optimizers import OptimizerLog, read_cleared
from gradcheck_l2c.record.origins import MADE, Origins
from gradcheck_l2c.record.reach import Reachability
from gradcheck_l2c.record.scope import Clock
from gradcheck_l2c.record.taint import Chain, Taint, TaintStore
from gradcheck_l2c.record.terms import TermLog
from gradcheck_l2c.record.torch_internals import function_class
from gradcheck_l2c.record.unregistered import UnregisteredLog
from gradcheck_l2c.record.updates import nonzero
from gradcheck_l2c.record.waiting_optimizers import lone_backward, unstepped_names
from gradcheck_l2c.record.watch import WatchRegistry

Tensor = torch.Tensor
MAX_GRAPHS = 8
_NONE: frozenset[int] = frozenset()  # no keys (a backward no step will read)


@dataclass
class PendingGraph:
    """A backward's graph in which watched tensors got no gradient, kept until findings exist."""

    root: Any
    missing: tuple[int, ...]
    chains: dict[int, list[Chain]]
    reentry: dict[int, list[Any]]  # id(event) -> graph nodes where tainted values came back in
    signature: int


class NonLeafRead(NamedTuple):
    """User code read ``.grad`` of a tensor that is no leaf, which backward never fills."""

    site: Site | None
    name: str
    is_leaf: bool
    grad_fn: Any
    made_here: Site | None = None  # the line of the reading function that the tensor came out of
    refused: bool = False  # an optimizer refused it ("can't optimize a non-leaf Tensor") rather than a .grad read
    stored: bool = False  # read as an attribute (``model.h.grad``): a method kept it there, where it was made
    after_backward: bool = False  # a backward had ended before the read (a read before any shows nothing missing)

class BackwardLog:
    """Facts about the backward passes of the traced thread and the ``.grad`` reads after them."""

    def __init__(self, registry: WatchRegistry, taints: TaintStore, events: EventLog, optimizers: OptimizerLog,
                 cuts: CutRecorder, unregistered: UnregisteredLog, terms: TermLog, clock: Clock,
                 discover: Callable[[Any], None]) -> None:
        self.registry, self.taints, self.events, self.optimizers = registry, taints, events, optimizers
        self.cuts, self.unregistered, self.terms, self.clock = cuts, unregistered, terms, clock
        self._discover = discover
        self.arrivals = Arrivals(registry, taints, optimizers)
        self.events_at_backward = 0  # events recorded before the last backward ended
        self.missed: dict[int, dict[Chain, int]] = {}  # watched key -> the cut chains backward missed it by
        self.cut_off: set[int] = set()  # the keys the latest backward missed through a cut
        # watched key -> the op that takes the leaf, and where it is a user's custom Function, its backward's return
        self.consumers: dict[int, tuple[str, Site | None]] = {}
        self.gates: dict[int, Gate] = {}  # watched key -> where a user's backward left its input None (`gradient_gates`)
        # leaves in an output's graph autograd.grad(create_graph=True) took to other inputs: a loss may skip them
        self.under_derivative: set[int] = set()
        self.differentiated: set[int] = set()  # watched leaves a backward(inputs=...) or autograd.grad was asked about
        self.graphs: list[PendingGraph] = []
        self.graph_signatures: set[int] = set()
        self.nonleaf_reads: list[NonLeafRead] = []
        self.empty_reads = EmptyReads()  # .grad reads that found None, by the name the script read them as
        self.dead_ends: list[Taint] = []  # values whose every path was cut
        self.graphless: list[Site | None] = []  # backwards that raised "does not require grad"

    def ended(self, roots: list[Tensor], inputs: set[int] | None, frame: Any, site: Site | None,
              returned: set[int] = frozenset(), derived: bool = False) -> None:
        """A backward called at ``site`` ended: which watched tensors it reached, and which got values only via cuts.

        ``inputs``: the keys a ``backward(inputs=...)`` or ``autograd.grad`` differentiates (the others
        are left alone on purpose); ``returned``: those ``autograd.grad`` gave a gradient to, which it
        returns instead of filling ``.grad``; ``derived``: it was ``autograd.grad(create_graph=True)``.
        """
        self.clock.backwards += 1
        self.events_at_backward = len(self.events)
        registry = self.registry
        reached = frozenset(set(registry.arrived))  # what arrived (`arrival_hook`): kept uncopied, in a set's order
        if returned:
            reached |= returned
        registry.arrived.clear()
        self.differentiated |= inputs or _NONE
        optimizers = self.optimizers
        if self.terms.pending:  # the terms the previous backward summed, by the steps that followed it
            self.terms.resolve(optimizers.stepped_since)
        optimizers.stepped_since.clear()
        self.terms.check(roots, reached)
        self.terms.dropped.backward_ended(roots, reached)
        if reached and optimizers.live:
            optimizers.reached(reached)
            optimizers.updates.backward(reached)
        fed = optimizers.readers.take()  # run for gradients the script reads itself (Grad-CAM): no step need read it
        read = reached and optimizers.live and not returned and not fed  # autograd.grad fills no .grad to read
        optimizers.use.backward(site if read else None, reached if read else _NONE)
        optimizers.reading = fed and not any(map(optimizers.holding, reached))  # an old model's Grad-CAM: no optimizer
        backwards = self.clock.backwards
        if backwards == 1:
            registry.note_gone()
        if backwards <= 3:
            missing = self._note_consumers(roots, inputs, derived) - reached
            for key in missing:
                if not registry.all[key].ever_grad:
                    registry.all[key].got_grad = False
            if missing:  # to blame: a user's Function every path to the leaf goes through, before the op taking it
                grad_roots = graph.grad_roots([r for r in roots if r.requires_grad])
                for key, (function, returned, gate) in functions_before(grad_roots, missing, registry.key_of).items():
                    self.consumers[key] = (function, returned)
                    if gate is not None:
                        self.gates[key] = gate
        self.arrivals.reached(reached, backwards)
        if inputs is None and len(roots) == 1 and roots[0].grad_fn is not None:
            Reachability.remember(roots[0], reached)
        if backwards <= 3 or backwards % 50 == 0 or optimizers.told_anew:  # names, for one told (a late head) too
            optimizers.told_anew = False
            self._discover(frame)
            if backwards <= 3:
                lone_backward(optimizers.live, frame, reached)
            if backwards in (2, 3):
                unstepped_names(optimizers.live, frame)
        self.cut_off = _NONE
        taints = self.taints
        if not taints.by_id:  # no live tensor carries a cut
            return
        taint = None
        for root in roots:
            taint = taints.merge(taint, taints.get(root))
        if taint is None:
            return
        if self.terms.first_order and reached:
            self.terms.stepped_without_graph(taint, reached)
        missing: dict[int, list[Chain]] = {}
        for key, chain in taint.chains.items():
            if key in reached or (inputs is not None and key not in inputs):
                continue
            watched = registry.all[key]
            if not watched.ever_grad:
                watched.got_grad = False
            seen = self.missed.setdefault(key, {})
            seen[chain] = seen.get(chain, 0) + 1
            optimizers.missed(key, chain)
            missing.setdefault(key, []).append(chain)
        if missing:
            self.cut_off = set(missing)
            if any(map(optimizers.holding, missing)):  # a cut of what no optimizer steps explains no step's miss
                optimizers.use.cut()
            if len(self.graphs) < MAX_GRAPHS:
                _capture(self.graphs, self.graph_signatures, self.taints, roots, missing)

    def still_missing(self) -> int:
        """How many watched tensors a backward missed by a cut and none has reached since."""
        all_watched = self.registry.all
        return sum(1 for key in self.missed if not all_watched[key].ever_grad)

    def _note_consumers(self, roots: list[Tensor], inputs: set[int] | None, derived: bool) -> set[int]:
        """Which op consumes each watched leaf this backward differentiates (all of them, or only its
        ``inputs``): the one to blame if no gradient arrives; returns the keys of those leaves in the graph.
        A leaf outside ``inputs`` (a weight in the graph of ``autograd.grad(u, x)``) was not asked for; when
        the gradient has a graph (``derived``) it is noted as under a derivative."""
        key_of = self.registry.key_of
        found = set()
        for node in graph.iter_nodes(graph.grad_roots([r for r in roots if r.requires_grad]), graph.SAFE_WALK):
            for child, _ in node.next_functions:
                variable = getattr(child, "variable", None) if child is not None else None
                key = key_of(variable) if variable is not None else None
                if key is not None and (inputs is None or key in inputs):
                    if key not in self.consumers:
                        function = function_class(node)
                        self.consumers[key] = (type(node).__name__,
                                               user_backward_return(function) if function is not None else None)
                    found.add(key)
                elif key is not None and derived:
                    self.under_derivative.add(key)
        return found

    def assigned(self, tensor: Tensor) -> None:
        """User code assigned ``tensor.grad``: the gradient arrived, as from a backward."""
        self.clock.assigned += 1
        watched = self.registry.get(tensor)
        if watched is None:
            return
        watched.got_grad = True
        watched.last_reached = self.clock.backwards
        optimizers = self.optimizers
        if optimizers.live:
            optimizers.reached({watched.key})
        if not watched.ever_grad:
            watched.ever_grad = True
            if not optimizers.holding(watched.key) and not watched.grad_used:
                self.taints.settle(watched.key)
            optimizers.first_gradient(watched)

    def refused_by_optimizer(self, params: Any) -> None:
        """An optimizer refused its parameters: the tensors among them that are no leaf, as non-leaf reads."""
        groups = [params] if isinstance(params, Tensor) else list(params) if isinstance(params, (list, tuple)) else []
        tensors = [t for g in groups for t in ((g.get("params", []) if isinstance(g, dict) else [g]))]
        frame = user_frame(2)
        for tensor in (t for t in tensors if isinstance(t, Tensor) and not t.is_leaf):
            name = variable_name(frame, tensor) if frame is not None else None
            self.nonleaf_reads.append(NonLeafRead(user_site(2), name or "tensor", False, tensor.grad_fn,
                                                  _line_in(frame, tensor.grad_fn), refused=True))

    def grad_read(self, tensor: Tensor, value: Any) -> None:
        """User code read ``.grad``: a None or all-zero value there is a gradient they expected."""
        registry = self.registry
        if value is not None:
            watched = registry.get(tensor)
            if watched is None:
                return
            watched.grad_used = True  # the script itself reads it: its cuts keep travelling (`settle`)
            self.optimizers.use.read_by_script(watched.key)  # SAM's perturbation: that backward was used
            if watched.nonzero_grad:
                return
            found = nonzero(value)
            watched.nonzero_grad = watched.nonzero_grad or found
            if found:
                return
        site = user_site(2)
        watched = registry.get(tensor)
        if value is None:  # frozen by the script (did it expect a gradient?), or not reached yet (a crash here?)
            self.empty_reads.found_none(registry, tensor, watched, site, self.clock.backwards)
        if watched is not None:
            if watched.ever_grad and value is None:
                reader = user_frame(2)
                read_cleared(self.optimizers, watched, site, reader.f_code if reader is not None else None)
            watched.grad_read = watched.grad_read or site
            if watched.ever_grad and watched.key in self.cut_off:
                watched.cut_read = watched.cut_read or site  # it learnt before, but not from this loss
            if watched.variable is None and watched.owner is None:
                frame = user_frame(2)
                if frame is not None:
                    name_variables(registry, frame.f_locals)
            return
        taint = self.taints.get(tensor) or self.cuts.replacement_of(tensor)
        if tensor.is_leaf and taint is not None:
            self.dead_ends.append(taint)
        elif tensor.is_leaf and not tensor.requires_grad:
            self.unregistered.plain_attribute(registry, tensor, site)
        elif not tensor.is_leaf:
            self.nonleaf_reads.append(_nonleaf_read(tensor, user_frame(2), site)._replace(
                after_backward=self.clock.backwards > 0))


def _line_in(frame: Any, node: Any) -> Site | None:
    """Where the function running in ``frame`` was when ``node`` was made (the call that returned it, when a
    function it called made it), if the first iteration's lines were remembered (`origins.MADE`)."""
    stack = node.metadata.get(MADE) if frame is not None and node is not None else None
    return next((site for ident, code, site in stack or () if ident == id(frame) and code is frame.f_code), None)


def _nonleaf_read(tensor: Tensor, frame: Any, site: Site | None) -> NonLeafRead:
    """A ``.grad`` read of a non-leaf in ``frame``: named by the frame's variable, or, read as an attribute
    (``model.out.grad``), by it and the line that made it, wherever that ran (not the call that ran the method)."""
    stored = named_object(frame.f_code, frame.f_lasti, items=False) if frame is not None else None
    if stored is not None:
        return NonLeafRead(site, stored, False, tensor.grad_fn, Origins.site_of(tensor.grad_fn), stored=True)
    name = variable_name(frame, tensor) if frame is not None else None
    return NonLeafRead(site, name or "tensor", False, tensor.grad_fn, _line_in(frame, tensor.grad_fn))


def _capture(graphs: list[PendingGraph], signatures: set[int], taints: TaintStore, roots: list[Tensor],
             missing: dict[int, list[Chain]]) -> None:
    """Keep the graph of a backward that missed watched tensors through cuts (once per shape of graph and missing
    set), with the nodes where each cut's value re-entered it, for drawing."""
    nodes = graph.grad_roots([r for r in roots if r.requires_grad])
    if not nodes:
        return
    root = nodes[0]
    signature = hash((graph.signature(root, graph.SAFE_WALK), tuple(sorted(missing))))
    if signature in signatures:
        return
    signatures.add(signature)
    reentry: dict[int, list[Any]] = {}
    for node in graph.iter_nodes([root], graph.SAFE_WALK):
        variable = getattr(node, "variable", None)
        taint = taints.get(variable) if variable is not None else None
        if taint is None:
            continue
        for key, chain in taint.chains.items():
            if key in missing:
                reentry.setdefault(id(chain[-1]), []).append(node)
    graphs.append(PendingGraph(root, tuple(missing), missing, reentry, signature))
