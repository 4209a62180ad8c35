"""Why a backward that PyTorch refused failed, as facts: the in-place write that made a saved tensor stale,
or the cuts that left a loss without autograd graph. The judge words them; the error keeps its type."""
from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple

import torch

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.backwards import BackwardLog
from gradcheck_l2c.record.cuts import REENTRIES, CutRecorder
from gradcheck_l2c.record.events import EventLog
from gradcheck_l2c.record.locations import Site, user_frame, user_site
from gradcheck_l2c.record.names import resolve_names
from gradcheck_l2c.record.optimizers import OptimizerLog, OptimizerRecord
from gradcheck_l2c.record.refusal_sources import last_frozen
from gradcheck_l2c.record.stacks import user_stack
from gradcheck_l2c.record.taint import Taint, TaintStore
from gradcheck_l2c.record.torch_internals import SAVED_PREFIX, sequence_nr, version
from gradcheck_l2c.record.watch import WatchRegistry
from gradcheck_l2c.record.writes import WriteLog

KIND = "inplace_saved"
_MESSAGE = re.compile(
    r"\[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\](?:, which is output \d+ of (?P<producer>[\w:]+),)? "
    r"is at version (?P<version>\d+)(?:; expected version (?P<expected>\d+))?")


class StaleSaved(NamedTuple):
    """Backward failed because a tensor it saved was changed in place afterwards: by ``writer`` at
    ``write_site`` (an op, or ``opt.step()`` of an ``optimizer``), or by a write the trace did not see."""

    saver: str  # the autograd node that saved it, or "an operation"
    saver_site: str | None
    writer: str | None
    write_site: Site | None
    optimizer: str | None


def _in_shared_frame(step_stack: tuple, failed_stack: tuple) -> Site | None:
    """When the step ran inside a helper that the failing backward's caller also called (an ``update(loss,
    opt)`` that backs up and steps), the step's line in the frame where the two calls part: the call to
    reorder. Frames are matched from the outermost, where both stacks are the same running frames."""
    steps, failing = list(reversed(step_stack)), list(reversed(failed_stack))
    for depth, ((ident, code, site), (other, other_code, other_site)) in enumerate(zip(steps, failing)):
        if (ident, code) != (other, other_code):
            return None
        if site != other_site:  # the frame where they part
            return site if depth < len(steps) - 1 else None
    return None


class Graphless(NamedTuple):
    """backward() of a value without autograd graph (or ``autograd.grad`` of an input its outputs' graph does not
    reach): each cut the values went through (place, operation, kind) and the watched tensors it cut."""

    cuts: tuple[tuple[Site | None, str, str, tuple[str, ...]], ...]


BackwardFailure = StaleSaved | Graphless


class FailureRecorder:
    """Turns a backward's RuntimeError into facts, recorded like the rest of the run."""

    def __init__(self, registry: WatchRegistry, taints: TaintStore, events: EventLog, writes: WriteLog,
                 optimizers: OptimizerLog, cuts: CutRecorder, backwards: BackwardLog,
                 discover: Callable[[Any], None]) -> None:
        self.registry, self.taints, self.events, self.writes = registry, taints, events, writes
        self.optimizers, self.cuts, self.backwards, self._discover = optimizers, cuts, backwards, discover

    def failed(self, error: RuntimeError, roots: list[torch.Tensor], inputs: Any = None) -> BackwardFailure | None:
        """What the trace knows about why this backward (or ``autograd.grad`` of ``inputs``) failed, or None."""
        text = str(error)
        if "modified by an inplace operation" in text:
            return self._stale(text, roots)
        if "does not require grad and does not have a grad_fn" in text:  # not an input of autograd.grad refused
            self.backwards.graphless.append(user_site(1))  # the symptom: judged with the rest at the end
            frame = user_frame(1)
            if frame is not None:
                self._discover(frame)
            return self._graphless(roots)
        if "appears to not have been used in the graph" in text and inputs is not None:
            return self._unused(roots, [inputs] if isinstance(inputs, torch.Tensor) else list(inputs))
        return None

    def _unused(self, roots: list[torch.Tensor], inputs: list[Any]) -> Graphless | None:
        """``autograd.grad`` found an input unused: when the outputs' values came from it only through cuts (its
        positions sent to NumPy and back, detached), those cuts are why, judged as cuts of that input with the refused
        call as where its gradient was asked for."""
        keys = {key for key in map(self.registry.key_of, inputs) if key is not None}
        taint = None
        for root in roots:
            taint = self.taints.merge(taint, self.taints.get(root))
        chains = {key: chain for key, chain in (taint.chains.items() if taint is not None else ()) if key in keys}
        if not chains:
            return None
        site = user_site(2)
        for key in chains:
            watched = self.registry.all[key]
            watched.grad_read = watched.grad_read or site
        return self._graphless([], Taint(chains))

    def _stale(self, text: str, roots: list[torch.Tensor]) -> StaleSaved | None:
        match = _MESSAGE.search(text)
        if match is None:
            return None
        shape = tuple(int(s) for s in match["shape"].replace(" ", "").split(",") if s)
        stale = int(match["version"])
        # several writes since it was saved: the first one (the version after the expected one) is the change
        first = int(match["expected"]) + 1 if match["expected"] is not None else stale
        saver, pairs, near = _stale_saved(roots, shape, stale)
        saver_name = type(saver).__name__ if saver is not None else "an operation"
        saver_site = graph.node_site(saver)
        symptom = user_site(2)
        self._reentered(roots)
        write = _write_into(saver, self.writes.recent, first) or self._write(shape, first, exact=True) \
            or self._write(shape, stale, exact=True)
        step = self._stepped([(shape, stale)] + pairs, near) if write is None else None
        if step is not None:
            optimizer = _optimizer_name(step)
            self.events.record(KIND, -1, _in_shared_frame(step.step_stack, user_stack(2)) or step.step_site, f"{optimizer}.step()", saver=saver_name,
                               saver_site=saver_site, symptom=symptom, optimizer=step.name)
            return StaleSaved(saver_name, saver_site, f"{optimizer}.step()", step.step_site, step.name)
        write = write or self._write(shape, first, exact=False) or self._write(shape, stale, exact=False)
        if write is None:
            return StaleSaved(saver_name, saver_site, None, None, None)
        own = self._own_result_saved(match, shape) if write.shape != shape else None
        if own is not None:  # `y[:, 2::3].sigmoid_()` saved its result, a view; `y[:, 0::3] = ...` wrote beside it
            self.events.record(KIND, -1, own.site, own.op, saver=saver_name, saver_site=saver_site, symptom=symptom,
                               own=True, later=write.site)
            return StaleSaved(own.op, str(own.site), write.op, write.site, None)
        self.events.record(KIND, -1, write.site, write.op, saver=saver_name, saver_site=saver_site,
                           symptom=symptom)
        return StaleSaved(saver_name, saver_site, write.op, write.site, None)

    def _reentered(self, roots: list[torch.Tensor]) -> None:
        """The loss carries values copied into leaves without their history (``load_state_dict`` of computed
        weights): the graph meant to run through those copies does not exist, and the copies into what the
        graph saved make it stale. Those re-entries are the cause, judged as cuts of the watched tensors."""
        taint = None
        for root in roots:
            taint = self.taints.merge(taint, self.taints.get(root))
        chains = {key: chain for key, chain in (taint.chains.items() if taint is not None else ())
                  if chain[-1].kind in REENTRIES}
        if chains:
            self.backwards.dead_ends.append(Taint(chains))

    def _own_result_saved(self, match: Any, shape: tuple[int, ...]) -> Any:
        """The in-place op whose own result the failing node saved (the error's producer, ``Sigmoid`` for a
        ``sigmoid_``), when it left the tensor at the version backward expected; the caller asks only when the later
        write went into another tensor (the base of that view, or another part of it), which shares its version."""
        producer = match["producer"]
        if producer is None or match["expected"] is None:
            return None
        made = self._write(shape, int(match["expected"]), exact=True)
        if made is None or _op_name(made.op) != _op_name(producer.rsplit(":", 1)[-1]):
            return None
        return made

    def _write(self, shape: tuple[int, ...], stale: int, exact: bool) -> Any:
        """The latest in-place write in grad mode that left a tensor of this shape at this version; or,
        not ``exact``, the latest at this version (a write into the tensor a saved view belongs to,
        `out[:, :2] = ...`)."""
        for write in reversed(self.writes.recent):
            if write.version == stale and (write.shape == shape or not exact):
                return write
        return None

    def _stepped(self, stale: list[tuple[tuple[int, ...], int]], near: set[int]) -> OptimizerRecord | None:
        """Of the optimizers whose latest ``step()`` holds a parameter of a stale saved tensor's shape (or its
        transpose, which linear layers save) now at its version, the one that stepped first: every step from
        it on changed weights the graph saved, and it is where the steps went ahead of this backward (several
        critics stepped before the actor's loss that used them all). Where some of those parameters are inputs of
        the nodes that saved stale tensors (``near``), only those count: a world model stepped earlier holds
        parameters of the same shape, stepped as often, that this graph never saved."""
        found = []
        for record in sorted(self.optimizers.records, key=lambda r: r.step_order):
            optimizer = record.optimizer()
            if optimizer is None or record.step_site is None:
                continue
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if any(version(param) == at and tuple(param.shape) in (shape, shape[::-1]) for shape, at in stale):
                        found.append((id(param) in near, record))
        return next((record for saved, record in found if saved), found[0][1] if found else None)

    def _graphless(self, roots: list[torch.Tensor], taint: Taint | None = None) -> Graphless | None:
        if last_frozen(self.registry, every=True)[0] is not None:
            return None  # every parameter was switched off: that, not a cut on the way, left the loss without graph
        for root in roots:
            taint = self.taints.merge(taint, self.taints.get(root))
        frame = user_frame(3)
        if taint is None and frame is not None:  # a variable rebound to a no_grad copy of a watched leaf?
            for value in frame.f_locals.values():
                taint = self.taints.merge(taint, self.cuts.replacement_of(value))
            if taint is None:  # values detached after their weights had learnt (kept in a list to average)?
                taint = self.cuts.settled_exits.found_in(frame.f_locals.values())
        if taint is None:  # a value a module kept from a pass with gradients off (an evaluation's cache)?
            taint = self.cuts.settled_exits.cached_in_use(self.registry.key_of)
        if taint is None:
            return None
        self.backwards.dead_ends.append(taint)
        resolve_names(self.registry)
        cut: dict[tuple, list[str]] = {}
        self.backwards.arrivals.unsteady()  # the next backward that reaches them marks them again
        for key, chain in taint.chains.items():
            watched = self.registry.all[key]
            watched.got_grad = False
            for event in chain:
                cut.setdefault((event.site, event.detail, event.kind), []).append(watched.name)
        return Graphless(tuple((*place, tuple(dict.fromkeys(names))) for place, names in cut.items()))


def _write_into(saver: Any, writes: Any, version: int) -> Any:
    """The latest write that left a tensor at ``version`` whose history before it is ``saver`` itself (a ReLU, a
    sigmoid, saving its result) or among the nodes it takes its inputs from (through the views it saved, a few nodes
    down): the write into the very tensor it saved, where several tensors of that shape were written (a module called
    twice on one input it changes in place, an in-place layer beside a `+=` on another layer's output)."""
    if saver is None:
        return None
    inputs = {id(node) for node in graph.iter_nodes([child for child, _ in saver.next_functions if child is not None],
                                                    _SAVED_INPUT_NODES)}
    inputs.add(id(saver))
    return next((w for w in reversed(writes) if w.version == version and w.before in inputs), None)


def _op_name(name: str) -> str:
    """An op's name as an in-place write and an autograd node both give it: ``sigmoid_``, ``SigmoidBackward0``,
    ``Sigmoid`` -> ``sigmoid``."""
    return name.rstrip("0123456789").removesuffix("Backward").strip("_").lower()


#: How many nodes below a saving node are looked at for the history of the tensor it saved (views of it).
_SAVED_INPUT_NODES = 8


def _optimizer_name(record: OptimizerRecord) -> str:
    """The variable the user's code holds the optimizer in (``opt_D``), else its class."""
    optimizer = record.optimizer()
    frame = user_frame(3)
    while optimizer is not None and frame is not None:
        for name, value in frame.f_locals.items():
            if value is optimizer and name != "self":
                return name
        frame = frame.f_back
    return record.name


def _stale_saved(roots: list[torch.Tensor], shape: tuple[int, ...],
                 version: int) -> tuple[Any, list[tuple[tuple[int, ...], int]], set[int]]:
    """The node whose saved tensor is stale with the ``shape`` and ``version`` of the error, the latest made of such
    (of several writes into saved tensors, the one the engine met first), else the first stale one; the shape and
    version of every stale tensor the graph saved; and the ids of the leaves those nodes take (directly or through a
    transpose or view: a linear layer saves its weight's transpose)."""
    saver, first, stale, near = None, None, [], set()
    for node in graph.iter_nodes(graph.grad_roots([r for r in roots if r.requires_grad]), graph.SAFE_WALK):
        for attr in dir(node):
            if not attr.startswith(SAVED_PREFIX):
                continue
            try:
                getattr(node, attr)
            except RuntimeError as error:
                match = _MESSAGE.search(str(error)) if "modified by an inplace operation" in str(error) else None
                if match is not None:
                    found = (tuple(int(s) for s in match["shape"].replace(" ", "").split(",") if s),
                             int(match["version"]))
                    first = first or node
                    if found == (shape, version) and (saver is None or _made_after(node, saver)):
                        saver = node  # the engine runs the newest ready node first: the latest made of them
                    stale.append(found)
                    near |= _input_leaves(node)
    return saver or first, stale, near


def _made_after(node: Any, other: Any) -> bool:
    return (sequence_nr(node) or -1) > (sequence_nr(other) or -1)


def _input_leaves(node: Any) -> set[int]:
    """The ids of the leaves among ``node``'s inputs, and among the inputs of the nodes right behind it."""
    found, behind = set(), [child for child, _ in node.next_functions if child is not None]
    for child in behind + [grand for child in behind for grand, _ in child.next_functions if grand is not None]:
        variable = getattr(child, "variable", None)
        if variable is not None:
            found.add(id(variable))
    return found
