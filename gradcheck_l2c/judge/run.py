"""Turn what a trace saw into findings: for each watched tensor without a gradient, why and where."""
from __future__ import annotations

import dataclasses
import fnmatch
import functools
from dataclasses import dataclass, field
from typing import Any

from gradcheck_l2c.judge.detectors import CUTS, SCANNERS
from gradcheck_l2c.judge.grad_stats import layer_gradients
from gradcheck_l2c.judge.leaf_backward import leaf_backward_finding, leaf_backwards
from gradcheck_l2c.judge.suppressions import apply_suppressions, touched_files
from gradcheck_l2c.judge.symptoms import with_symptoms
from gradcheck_l2c.judge.zero_gradients import zero_gradient_findings
from gradcheck_l2c.record.facts import Event, Site, StepMiss, Watched
from gradcheck_l2c.record.query import TraceRecord
from gradcheck_l2c.records import CapturedGraph, Cut, Finding, LayerGradients, Related, WatchedTensor
from gradcheck_l2c.rules import KINDS as _ALL_KINDS
from gradcheck_l2c.rules import rule_for

#: Zero-derivative events that explain a zero gradient, never a missing one (a clamp beyond every value, rsample's loc).
_ZEROS_ONLY = frozenset(("saturated", "cancelled"))


@dataclass
class Run:
    """The finished trace as the scanners see it: its record, the selected keys, names, and a finding factory."""

    record: TraceRecord
    keys: set[int]
    findings: list[Finding] = field(default_factory=list)
    optimized: set[int] = field(default_factory=set)

    def watched(self) -> list[Watched]:
        return [w for w in self.record.watched() if w.key in self.keys]

    def name(self, key: int) -> str:
        return self.record.watched_at(key).name

    def __post_init__(self) -> None:
        self._asked_layers = {_layer(w) for w in self.record.watched() if w.explicit or w.grad_read is not None}
        self._asked_layers.discard(None)
        self._learning_calls: set[tuple[str, int, int]] | None = None

    def last_of_a_loop(self, watched: Watched) -> bool:
        """A tensor (no parameter) that got no gradient, made by a call (line and column) whose other tensors got
        one: the last of the leaves a loop remakes there (PGD's perturbation, an inner optimisation's variable),
        left when the loop ended."""
        if watched.is_parameter or watched.ever_grad or watched.site is None:
            return False
        if self._learning_calls is None:
            self._learning_calls = {_call(w.site) for w in self.record.watched()
                                    if not w.is_parameter and w.ever_grad and w.site is not None}
        return _call(watched.site) in self._learning_calls

    def expected(self, watched: Watched) -> bool:
        """The user asked for this gradient: by watching it, reading its ``.grad`` (or another parameter's
        of the same layer: ``fc.weight.grad`` asks for ``fc.bias`` too), or creating it with
        ``requires_grad=True`` themselves (module parameters require grad by default) — unless
        ``copy.deepcopy`` copied it: then the copies learn, and the template is judged through them."""
        return (watched.explicit or watched.grad_read is not None
                or (watched.user_leaf and not watched.copied and not self._kept_by_hand(watched))
                or (self.record.spec.narrowed and watched.key in self.keys)
                or (bool(self._asked_layers) and _layer(watched) in self._asked_layers))

    def expected_or_optimized(self, watched: Watched) -> bool:
        return self.expected(watched) or self.optimized_param(watched)

    def _kept_by_hand(self, watched: Watched) -> bool:
        """A parameter of a module none of whose parameters an optimizer holds or a backward reached, while optimizers
        step other modules: a copy the script keeps itself (an EMA generator, a target network built anew)."""
        if watched.owner is None or watched.ever_grad or self.optimized_param(watched):
            return False
        trained = self._trained_modules
        return bool(trained) and id(watched.owner.module) not in trained

    @functools.cached_property
    def _trained_modules(self) -> frozenset[int]:
        """The modules whose parameters an optimizer holds or a backward reached, by the reference each watched
        tensor's owner keeps to its module (one per module, while the record lives: a module made later at a dead
        one's address is another); none if no optimizer holds a module's parameter."""
        owned = [w for w in self.record.watched() if w.owner is not None]
        if not any(self.optimized_param(w) for w in owned):
            return frozenset()
        return frozenset(id(w.owner.module) for w in owned if w.ever_grad or self.optimized_param(w))

    def probe(self, watched: Watched) -> bool:
        """A tensor the script made with requires_grad=True, whose gradient nobody read and that no optimizer holds,
        while optimizers hold others: evaluated (a loss at chosen values, printed), not trained."""
        return _bare_leaf(self, watched) and watched.grad_read is None and bool(self.optimized)

    def optimized_param(self, watched: Watched) -> bool:
        """The tensor sits in an optimizer: someone meant it to learn."""
        tensor = watched.tensor
        return watched.optimized or (tensor is not None and id(tensor) in self.optimized)

    def replaces(self, watched: Watched) -> bool:
        """It was made after an optimizer (by user code, then loaded with values, or as a whole new model bound to
        a name), at a line whose every new
        parameter stands where one of the same shape sits in an optimizer (same module class and attribute
        path): a module rebuilt or a Parameter re-made as it was, not a model that grew or shrank (a resized
        embedding, a pruned layer) nor a fresh layer put in place (a new classification head)."""
        if watched.built_at is None or not (watched.user_leaf or watched.filled or watched.rebound):
            return False  # a fresh layer (a new head): the optimizer must be built after it, not this line
        made = [w for w in self.record.watched() if w.built_at == watched.built_at and w.owner is not None]
        return bool(made) and all(self._stale_twin(w) is not None for w in made)

    def replaced(self, watched: Watched) -> bool:
        """An optimizer holds it, and a parameter made later in its place (`replaces`) took it out of use."""
        return watched.optimized and watched.owner is not None and any(
            self._stale_twin(w) is watched and self.replaces(w) for w in self.record.watched()
            if w.built_at is not None and w.owner is not None and w.owner.attribute == watched.owner.attribute)

    def _stale_twin(self, new: Watched) -> Watched | None:
        """The optimizer-held parameter at ``new``'s place with its shape."""
        owner = new.owner
        return next((old for old in self.record.watched()
                     if old.key < new.key and old.optimized and old.owner is not None and old.owner.cls == owner.cls
                     and old.owner.attribute == owner.attribute and old.shape == new.shape), None)

    def wants(self, *names: str) -> bool:
        """Whether a finding about these names passes the user's watch patterns."""
        spec = self.record.spec
        if not spec.narrowed:
            return True
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in spec.patterns for name in names)

    def finding(self, kind: str, severity: str, tensor: str, site: Site | None, message: str, fix: str,
                count: int = 1, related: dict[str, Site | None] | None = None) -> Finding:
        """A finding at ``site``; ``related`` maps roles (``symptom``, ``defined``, ``used``) to other places.

        A finding always has a real place: without one, the first user line the trace knows stands in.
        """
        if site is None or site.line <= 0:
            site = next((s for s in (related or {}).values() if s is not None), None) or self.anchor()
        file, line = (site.file, site.line) if site is not None else ("<unknown>", 0)
        code = site.code if site is not None else ""
        places = tuple(Related(s.file, s.line, role, s.code) for role, s in (related or {}).items()
                       if s is not None and (s.file, s.line) != (file, line))
        return Finding(kind, severity, tensor, file, line, code, message, fix, count,  # type: ignore[arg-type]
                       places, column=site.text_column if site is not None else None)

    def anchor(self) -> Site | None:
        """The first user line the trace recorded: where a tensor was made, or where something happened."""
        for watched in self.record.watched():
            if watched.site is not None and watched.site.line > 0:
                return watched.site
        return next((e.site for e in self.record.events(*_ALL_KINDS) if e.site is not None), None)

    def cut_finding(self, event: Event, tensor: str, symptom: Site | None = None) -> Finding:
        """The finding for one cut of ``tensor``; ``symptom`` is where the missing gradient showed."""
        detector = CUTS[event.kind]
        message, fix = detector.describe(event, tensor)
        related = {"symptom": symptom, **(detector.related(event) if hasattr(detector, "related") else {})}
        return self.finding(event.kind, rule_for(event.kind).level, tensor, self.cut_site(event), message, fix,
                            event.count, related=related)

    @staticmethod
    def cut_site(event: Event) -> Site | None:
        """The line to change for a cut: its own, or where its detector places it (a call made inside a
        caller's no_grad block)."""
        detector = CUTS[event.kind]
        return detector.place(event) if hasattr(detector, "place") else event.site

    def symptom(self, watched: Watched) -> Site | None:
        """Where the missing gradient showed: a ``.grad`` read that found None or zeros, or a backward
        that raised because nothing in its loss required grad."""
        graphless = self.record.graphless
        return watched.grad_read or (graphless[0] if graphless else None)

    def uses(self, watched: Watched) -> list[Event]:
        """The cuts the tensor's values went through although none of them reached a loss, in the order
        they happened. A ``state_dict()`` read is no use, a ``.detach()`` that the same line turned
        into a NumPy array or a number is told as that, and one of the leaf itself is a snapshot when every
        backward had a graph or the one that had none carried cuts of the tensor (those are its causes)."""
        events = [e for e in self.record.events_for(watched.key)  # a saturated clamp explains zeros, not None
                  if e.kind in CUTS and e.detail != "state_dict()" and e.extra.get("output") not in _ZEROS_ONLY
                  and not _read_for_a_log(e)]
        later = {e.site for e in events if e.kind in ("numpy", "item")}
        events = [e for e in events if not (e.kind in ("detach", "data_attr") and e.site in later)]
        if self.record.graphless and not any(watched.key in taint.chains for taint in self.record.dead_ends) and not any(
                fact.detail.get("bound_here") for fact in self.record.autograd_errors):  # a loss made from no-grad values
            return events
        # else a copy of the leaf itself (`before = w.detach().clone()`) is a snapshot, not a cut of what was trained
        return [e for e in events if not (e.kind in ("detach", "data_attr") and e.source is None)]


@dataclass
class Verdict:
    findings: list[Finding]
    watched: list[WatchedTensor]
    graphs: list[CapturedGraph]
    unmatched: list[str]
    names: list[str]
    layers: list[LayerGradients]  # --grad-stats: each parameter's gradient norms over the run


def judge(record: TraceRecord) -> Verdict:
    """All findings of a finished trace, the tensors judged, and the graphs to draw."""
    keys, unmatched = record.selected()
    every = record.watched()
    keys = {key for key in keys if not every[key].replaced}  # judged through their parametrizations
    run = Run(record, keys, optimized=_optimized(record))
    by_event: dict[int, Finding] = {}
    zero: list[Watched] = []
    unstepped: set[int] = set()  # got gradients, but never when an optimizer stepped it
    leaves = leaf_backwards(record)  # backwards started from a watched leaf (`leaf_backward`)
    refused = frozenset().union(*(error.reaches for error in record.autograd_errors))
    for watched in run.watched():
        if watched.ever_grad:
            miss = record.step_miss(watched.key)
            zeros = watched.zero_checks and not watched.nonzero_grad
            # it learnt with nothing to say (the most of a long run's tensors), or nobody meant it to learn
            if (miss is None and watched.cut_read is None and not zeros) or not watched.trainable() \
                    or not run.expected_or_optimized(watched):
                continue
            if miss is not None:
                unstepped.add(watched.key)
                run.findings.extend(_step_miss_findings(run, watched, miss))
            elif watched.cut_read is not None:
                run.findings.extend(run.cut_finding(event, watched.name, symptom=watched.cut_read)
                                    for event in ordered_events(record.missed(watched.key)))
            else:
                zero.append(watched)
            continue
        if not watched.trainable() or watched.gone_unused:  # frozen, or dropped before any backward ran
            continue
        if not run.expected_or_optimized(watched):
            continue  # nobody meant it to learn (a target network, a teacher): its cuts are by design
        if _bare_leaf(run, watched) and watched.grad_read is None and run.last_of_a_loop(watched):
            continue  # its values may go on (an adversarial batch, detached), its gradient was never wanted
        leaf = leaf_backward_finding(run, watched, leaves) if leaves else None
        if leaf is not None:  # its optimizer's gradients came from a backward of a leaf: no loss used it
            run.findings.append(leaf)
            continue
        if watched.key in refused:  # that refused backward was to give it its gradient: the refusal is the finding
            continue
        symptom = run.symptom(watched)
        chains = record.missed(watched.key)
        if chains and _bare_leaf(run, watched):  # a leaf re-made from its own values (PGD's next step) on purpose
            chains = {chain: count for chain, count in chains.items() if not _remade_as_leaf(chain)}
        if chains:
            events = ordered_events(chains.keys())
        elif symptom is not None or (record.backwards and not _bare_leaf(run, watched)):
            events = run.uses(watched)  # cut on the way and never reached a loss
        else:
            events = []
        for event in events:
            finding = run.cut_finding(event, watched.name, symptom=symptom)
            by_event[id(event)] = finding
            run.findings.append(finding)
    run.findings.extend(zero_gradient_findings(run, zero))
    for taint in record.dead_ends:
        for key, chain in taint.chains.items():
            if key in keys:
                symptom = run.symptom(record.watched_at(key))  # the refused backward, for a tensor other losses reached
                run.findings.extend(run.cut_finding(e, run.name(key), symptom=symptom) for e in chain)
    for scanner in SCANNERS:
        run.findings.extend(scanner.scan(run))
    graphs = [_captured(run, pending, by_event) for pending in record.graphs]
    named = {finding.tensor for finding in run.findings}
    reads = record.empty_reads.watched  # a frozen tensor read by name is told by the name it was read as
    watched = [WatchedTensor(w.name, w.shape, False if w.key in unstepped else w.got_grad) if w.trainable()
               else WatchedTensor(reads[w.key].name, w.shape, False)
               for w in run.watched() if (w.trainable() and _listed(run, w, named)) or _frozen_read(run, w)]
    names = sorted({w.name for w in record.watched()})
    findings = with_symptoms(run, _unique(run.findings))
    findings = apply_suppressions(findings, touched_files(record, findings))
    return Verdict(findings, watched, [g for g in graphs if g is not None], unmatched, names,
                   layer_gradients(record))


def value_cuts(record: TraceRecord, value: Any) -> list[Finding]:
    """Why ``value`` (a tensor without ``grad_fn``, a number) has no autograd history: the cuts its
    values went through, in the order they flowed, as findings about the tensors they came from."""
    taint = record.taint_of(value)
    if taint is None:
        return []
    run = Run(record, {w.key for w in record.watched()})
    return _unique([run.cut_finding(e, run.name(key)) for key, chain in taint.chains.items() for e in chain])


def _step_miss_findings(run: Run, watched: Watched, miss: StepMiss) -> list[Finding]:
    """The cuts that kept a tensor's gradient from every optimizer step that updated it; its other
    gradients (from other losses) were cleared before those steps. The symptom: a ``.grad`` read that found None or
    zeros, else the first such step."""
    findings = []
    steps = f"{miss.steps} time{'s' if miss.steps != 1 else ''}"
    for event in ordered_events(miss.chains):
        finding = run.cut_finding(event, watched.name, symptom=watched.grad_read or miss.site)
        message = (f"{finding.message.rstrip('.')}, so {miss.optimizer}.step() found no gradient for it "
                   f"({steps}); the gradients it got from other losses were cleared before the step.")
        findings.append(dataclasses.replace(finding, message=message))
    return findings


def _call(site: Site) -> tuple[str, int, int]:
    """A site with its column: two calls on one line (``[torch.randn(...), torch.zeros(...)]``) are told apart."""
    return site.file, site.line, site.column


def _layer(watched: Watched) -> tuple[int, str] | None:
    """The module that directly holds a parameter, as (its outermost module's id, path to it): known even
    after the module is gone (scripts end before they are judged)."""
    if watched.owner is None:
        return None
    return watched.owner.ident, watched.owner.attribute.rpartition(".")[0]


def _read_for_a_log(event: Event) -> bool:
    """A ``.item()`` whose number never came back into torch (printed, logged, compared): it changed nothing that
    could have given the tensor a gradient."""
    return event.kind == "item" and event.detail == ".item()" and not event.extra.get("spent")


def _bare_leaf(run: Run, watched: Watched) -> bool:
    """A tensor the script made with requires_grad=True that no loss reached, no optimizer holds, and whose
    gradient nobody read: its values were used, maybe cut, but nothing shows a gradient was wanted of them
    (FGSM's input, skipped before its backward)."""
    return watched.user_leaf and not watched.explicit and not watched.is_parameter \
        and not run.optimized_param(watched)


def _remade_as_leaf(chain: Any) -> bool:
    """The leaf's own tensor values (``.data`` or ``.detach()`` of the leaf itself, not of a result computed
    from it, nor a number) became a new leaf that requires grad (PGD's ``x = Variable(x.data + eta,
    requires_grad=True)``): the new leaf takes the gradient, by design."""
    first, last = chain[0], chain[-1]
    return first.kind in ("data_attr", "detach") and first.source is None \
        and last.kind == "tensor_rewrap" and bool(last.extra.get("requires_grad"))


def _listed(run: Run, watched: Watched, named: set[str]) -> bool:
    """Whether the summary counts it: a tensor without gradient that nobody meant to learn (optimizers
    exist, none holds it, the user did not ask) and no finding names is a copy, a target network, a
    template or a replaced original; saying it "got no gradient" would blame correct code."""
    if watched.ever_grad:
        return True
    if watched.gone_unused and watched.name not in named:
        return False  # dropped before any backward ran: it could never have learnt
    if _bare_leaf(run, watched) and watched.grad_read is None and run.last_of_a_loop(watched):
        return False
    return (watched.ever_grad or watched.name in named or not run.record.optimizers
            or run.expected_or_optimized(watched))


def _frozen_read(run: Run, watched: Watched) -> bool:
    """A tensor the script froze and never trained, whose ``.grad`` it read by name and found None: the summary counts
    it as without gradient, as the script saw it (a frozen backbone nobody reads stays out)."""
    return watched.key in run.record.empty_reads.watched and not watched.ever_grad


def _optimized(record: TraceRecord) -> set[int]:
    return {id(p) for optimizer in record.optimizers for p in (ref() for ref in optimizer.params) if p is not None}


def _unique(findings: list[Finding]) -> list[Finding]:
    """Each finding once (the first of several with the same ``Finding.key()``)."""
    seen: set[tuple[str, str, str, int]] = set()
    unique = []
    for finding in findings:
        key = finding.key()
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique


def ordered_events(chains: Any) -> list[Event]:
    """The cuts of several chains, nearest the watched tensor first, each once."""
    position: dict[Event, tuple[int, int]] = {}
    for chain in chains:
        for index, event in enumerate(chain):
            rank = (index, event.order)
            if event not in position or rank < position[event]:
                position[event] = rank
    return sorted(position, key=position.__getitem__)


def _captured(run: Run, pending: Any, by_event: dict[int, Finding]) -> CapturedGraph | None:
    missing = tuple(run.name(k) for k in pending.missing if k in run.keys)
    if not missing:
        return None
    tensors = {}
    for watched in run.watched():
        tensor = watched.tensor
        if tensor is not None:
            tensors[watched.name] = tensor
    cuts = []
    for key in pending.missing:
        chains = pending.chains[key]
        before = {chain[i]: chain[i - 1] for chain in chains for i in range(1, len(chain))}
        findings: dict[Any, Finding] = {}
        for event in ordered_events(chains):
            finding = findings[event] = by_event.get(id(event)) or run.cut_finding(event, run.name(key))
            previous = before.get(event)
            cuts.append(Cut(finding, event.source, tuple(pending.reentry.get(id(event), ())),
                            findings.get(previous) if previous is not None else None))
    return CapturedGraph(pending.root, tensors, missing, tuple(cuts), pending.signature)
