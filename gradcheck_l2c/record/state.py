"""One trace's record: the parts that keep its facts, built together and ended together.

Each part has one duty (`watch.py` what is watched, `cuts.py` cuts and taint, `backwards.py` what each
backward reached, `optimizers.py` the steps, `writes.py` in-place writes and snapshots, `failures.py`
refused backwards, `unregistered.py` tensors modules hold unregistered, `ddp.py` DistributedDataParallel,
`terms.py` loss terms without gradient, `nonfinite.py` where NaN/Inf was born (``--nan``), `scope.py` the thread and the clock, `origins.py` the lines that made
early autograd nodes, `autograd_errors.py` autograd's own errors). The interceptor and the patches report to
the parts; the judge reads them only through `query.TraceRecord`.
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from gradcheck_l2c.record.autograd_errors import AutogradError, ErrorRecorder
from gradcheck_l2c.record.backwards import BackwardLog
from gradcheck_l2c.record.cuts import CutRecorder
from gradcheck_l2c.record.ddp import DdpLog
from gradcheck_l2c.record.discovery import discover
from gradcheck_l2c.record.events import EventLog
from gradcheck_l2c.record.failures import FailureRecorder
from gradcheck_l2c.record.gradstats import GradStats
from gradcheck_l2c.record.hook_refusals import HookRefusals
from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.names import name_lines_alike, resolve_names
from gradcheck_l2c.record.nonfinite import NanWatch
from gradcheck_l2c.record.optimizers import OptimizerLog, step_undone
from gradcheck_l2c.record.origins import Origins
from gradcheck_l2c.record.placements import joined, placements
from gradcheck_l2c.record.query import TraceRecord
from gradcheck_l2c.record.reach import Reachability
from gradcheck_l2c.record.scope import Clock, Scope
from gradcheck_l2c.record.source_sites import attribute_site
from gradcheck_l2c.record.taint import TaintStore
from gradcheck_l2c.record.terms import TermLog
from gradcheck_l2c.record.updates import UpdateLog
from gradcheck_l2c.record.unregistered import UnregisteredLog
from gradcheck_l2c.record.watch import WatchRegistry, WatchSpec
from gradcheck_l2c.record.writes import WriteLog

#: Words an autograd error's facts as the note added to PyTorch's error (the judge's, given by the front door).
FailureWording = Callable[[AutogradError], "str | None"]


class TraceState:
    """Builds the parts of one trace's record, ends them, and hands the judge a read-only view."""

    def __init__(self, spec: WatchSpec, record_sites: bool = False, word_failure: FailureWording | None = None,
                 nan: bool = False, grad_stats: bool = False):
        self.spec = spec
        self.scope = Scope(record_sites)
        self.clock = Clock()
        self.registry = WatchRegistry(self.clock)
        self.events = EventLog()
        self.taints = TaintStore()
        self.reach = Reachability(self.registry)
        self.unregistered = UnregisteredLog()
        self.ddp = DdpLog()
        self.cuts = CutRecorder(self.registry, self.reach, self.events, self.taints, self.scope)
        self.writes = WriteLog(self.registry, self.reach, self.events)
        self.updates = UpdateLog()
        self.optimizers = OptimizerLog(self.registry, self.taints, self.events, self.clock, self.updates)
        self.terms = TermLog(self.taints, self.reach, self.cuts.numpy_exits)
        self.backwards = BackwardLog(self.registry, self.taints, self.events, self.optimizers, self.cuts,
                                     self.unregistered, self.terms, self.clock, self.discover)
        self.failures = FailureRecorder(self.registry, self.taints, self.events, self.writes, self.optimizers,
                                        self.cuts, self.backwards, self.discover)
        self.taints.on_settle.append(functools.partial(self.events.settle, missed=self.backwards.missed,
                                                       taints=self.taints))
        self.origins = Origins()
        self.errors = ErrorRecorder(self.registry, self.origins, self.scope, self.optimizers.stepped_since, self.writes)
        self.hook_refusals = HookRefusals()  # backwards refused inside another backward's hook
        self._word_failure = word_failure
        self.health = NanWatch(self.clock, self.registry) if nan else None  # --nan: where NaN/Inf was born
        self.grad_stats = GradStats(self.registry) if grad_stats else None  # --grad-stats: norms per backward

    def watch_requested(self, spec: WatchSpec | None = None) -> None:
        """Watch what the user gave by object (to this trace, or to ``spec``'s joined trace): tensors (under
        the names given) and modules' parameters."""
        spec, registry = spec or self.spec, self.registry
        for tensor in spec.tensors:
            if tensor.is_leaf:
                registry.watch_leaf(tensor, None, explicit=True)
            else:
                registry.add(tensor, None, explicit=True)
            watched = registry.get(tensor)
            watched.variable = spec.names.get(id(tensor), watched.variable)
        for module in spec.modules:
            registry.add_module(module, spec.names.get(id(module)))
            for name, param in module.named_parameters():
                registry.watch_leaf(param, None, owner=(module, name), explicit=True)

    def discover(self, frame: Any) -> None:
        """Learn modules and variable names from the user frames on the stack."""
        discover(self.registry, self.unregistered, frame)

    def backward_failed(self, error: RuntimeError, roots: list[torch.Tensor], site: Site | None,
                        inputs: Any = None) -> None:
        """PyTorch refused the backward called at ``site``: record why, and add the judge's words to its error
        (its type and traceback stay the same). ``inputs``: what an autograd.grad differentiated."""
        self.ddp.error(error, site)
        failure = self.failures.failed(error, roots, inputs)
        in_hook = self.hook_refusals.of(error)  # refused inside a hook of this one: its call is the one refused
        self._note(error, lambda: self.errors.backward(error, roots, site, failure, inputs, in_hook))

    def op_failed(self, error: RuntimeError, func: Any, args: tuple, kwargs: dict) -> None:
        """An op raised: record it if it is one of autograd's errors (an in-place write into a leaf, an
        inference tensor saved for backward, deepcopy of a tensor with history), and add the judge's words."""
        self._note(error, lambda: self.errors.op(error, func, args, kwargs))

    def _note(self, error: RuntimeError, record: Callable[[], AutogradError | None]) -> None:
        """Record the error's facts and add the note; the script's own error is what propagates, whatever
        happens here."""
        try:
            fact = record()
            note = self._word_failure(fact) if fact is not None and self._word_failure is not None else None
        except Exception as internal:  # a fact the tool could not take must never replace the script's own error,
            # nor be lost without a word: the reader learns the error went unexplained, and why
            note = (f"gradcheck-l2c: could not explain this error (the tool's own {type(internal).__name__}: "
                    f"{internal}); please report it with this traceback")
        if note and note not in getattr(error, "__notes__", ()):
            error.add_note(note)

    def reloaded(self, tensor: Any) -> None:
        """Values were copied into the leaf ``tensor`` without grad (``load_state_dict``, ``copy_``): it is filled, and
        the latest step of an optimizer holding it, undone (`optimizers.step_undone`)."""
        watched = self.registry.get(tensor)
        if watched is not None:
            watched.filled = True
            step_undone(self.optimizers, watched.key)

    def resolve_names(self) -> None:
        """Name every watched tensor from the modules alive now."""
        resolve_names(self.registry)

    def finish(self, raised: BaseException | None = None) -> None:
        """The last look at live objects before judging: names, the lines that assigned the parameters of
        modules built before the trace, and the tensors modules hold unregistered; ``raised``: what stopped the script."""
        self.backwards.empty_reads.raised(raised)
        resolve_names(self.registry)
        name_lines_alike(self.registry)
        self.backwards.arrivals.write_back()
        for watched in self.registry.all:
            if watched.site is None and watched.owner is not None and not watched.ever_grad:
                module = watched.owner.module()
                if module is not None:
                    watched.site = attribute_site(module, watched.owner.attribute)
        self.unregistered.collect(self.registry)
        self.unregistered.collect_initialised(self.registry)
        self.unregistered.flags.collect(self.registry)
        self.terms.resolve(self.optimizers.stepped_since)
        self.updates.compare()
        self.optimizers.left_out.end(self.optimizers.held)
        registry = self.registry
        for watched in registry.all:
            watched.placed = placements(registry, watched) if watched.owner is not None else []  # held by no module
            if watched.built_at is not None:
                watched.joined = joined(registry, watched)

    def end(self) -> None:
        """Remove the hooks on watched tensors and forget the live scalars (the trace stops)."""
        self.registry.unhook()
        self.terms.dropped.end()

    def record(self, spec: WatchSpec | None = None) -> TraceRecord:
        """The read-only view the judge works from; ``spec``: judge what another (joined) trace asked for."""
        return TraceRecord(spec or self.spec, self.registry, self.events, self.taints, self.clock, self.scope, self.backwards,
                           self.optimizers, self.writes, self.unregistered, self.ddp, self.terms, self.errors,
                           self.health, self.grad_stats)
