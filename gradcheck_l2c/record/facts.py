"""The types of the facts the record stage hands the judge: the one vocabulary both stages share."""
from __future__ import annotations

from gradcheck_l2c.record.autograd_errors import AutogradError
from gradcheck_l2c.record.backwards import NonLeafRead, PendingGraph
from gradcheck_l2c.record.ddp import DdpError, DdpModule, DdpRecord
from gradcheck_l2c.record.dropped_terms import DroppedTerm
from gradcheck_l2c.record.events import INTO_ALIAS, LEAF_BACKWARD, ONTO_ITSELF, Event, EventExtra
from gradcheck_l2c.record.failures import BackwardFailure, Graphless, StaleSaved
from gradcheck_l2c.record.gradient_use import UnreadBackward
from gradcheck_l2c.record.gradstats import GradSeries
from gradcheck_l2c.record.library_calls import LibraryCall
from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.nonfinite import NonFinite
from gradcheck_l2c.record.optimizers import OptimizerRecord, StepMiss
from gradcheck_l2c.record.taint import Chain, Taint
from gradcheck_l2c.record.terms import TakenGradient
from gradcheck_l2c.record.unregistered import Unregistered
from gradcheck_l2c.record.updates import Unchanged
from gradcheck_l2c.record.watch import Owner, Watched, WatchSpec
from gradcheck_l2c.record.writes import InplaceNote

__all__ = [
    "INTO_ALIAS", "LEAF_BACKWARD", "ONTO_ITSELF", "AutogradError", "BackwardFailure", "Chain", "DdpError", "DdpModule", "DdpRecord", "DroppedTerm", "Event", "EventExtra", "GradSeries",
    "Graphless", "InplaceNote", "LibraryCall", "NonFinite", "NonLeafRead", "OptimizerRecord", "Owner", "PendingGraph", "Site",
    "StaleSaved", "StepMiss", "TakenGradient", "Taint", "Unchanged", "Unregistered", "UnreadBackward", "WatchSpec",
    "Watched",
]
