"""A ``.grad`` read that found None where the script then died on it (a TypeError or AttributeError on None): a loop
over every parameter reading the gradient of one that does not require grad (a pruning mask, a frozen layer) or of
one the loss never uses, or a gradient zeroed by hand before the first backward gave one. Or reads that skipped
such a None, where the script died on a size: gradients gathered after each of several backwards, of which only
later ones reached that tensor (a coefficient only one loss term uses, among a network's parameters)."""
from __future__ import annotations

import math
import re

from gradcheck_l2c.records import Finding

KIND = "optimizer"
SKIP = ("skip the tensors without a gradient (`if p.grad is None: continue`), or loop over those that learn: "
        "[p for p in model.parameters() if p.requires_grad].")


def crashed_read(run) -> list[Finding]:
    """The finding at the line that read the None, when the script died there on it."""
    read = run.record.empty_reads.crashed
    if read is None or (read.key is not None and run.record.missed(read.key)):
        return []  # a cut kept the gradient from it: that cut's finding names the read as its symptom
    known = read.key is not None and read.key in run.keys
    tensor = run.name(read.key) if known else (f"the Parameter made at {read.made}" if read.made else "a tensor")
    if read.before is None:
        why = (f"{tensor} does not require grad (it was frozen)" if known else
               f"{tensor} was made with requires_grad=False" if read.made else "one of them does not require grad")
        return [run.finding(
            KIND, "warning", tensor, read.site,
            f"this line reads the .grad of each tensor the loop is given, and {why}: no backward gives it a gradient, "
            "so its .grad is None and the script died here on it.", SKIP, related={"defined": read.made})]
    if read.before == 0:
        return [run.finding(
            KIND, "error", tensor, read.site,
            f"no backward had run yet when this line read {tensor}.grad: a gradient exists only once a backward gives "
            "one, so it was None and the script died here on it.",
            "zero or read gradients after loss.backward() (zero them after the update, as optimizer.zero_grad() "
            "at the start of each step does: it skips a None), or skip a None gradient.")]
    return [run.finding(
        KIND, "warning", tensor, read.site,
        f"none of the {read.before} backwards before this line gave {tensor} a gradient (it takes no part in their "
        "losses), so its .grad was None and the script died here on it.", SKIP)]


def uneven_gathers(run) -> list[Finding]:
    """The tensor whose ``.grad`` was read None after a backward that did not reach it, skipped, and given a gradient by
    a later backward, when the script died on a size that differs from another by that tensor's: it is in the graphs
    of only some of the losses whose gradients the script gathers one backward at a time."""
    reads, error = run.record.empty_reads.uneven
    sizes = [int(number) for number in re.findall(r"(?:\[|\(|size )(\d+)", error)]  # not "entry 2", "dimension 0"
    for read in reads:
        if read.key not in run.keys or run.record.missed(read.key):
            continue
        watched, tensor = run.record.watched_at(read.key), run.name(read.key)
        # it was reached later, and two sizes the error names differ by its own: the vectors without it and with it
        if not watched.ever_grad or not any(b - a == math.prod(watched.shape) for a in sizes for b in sizes):
            continue
        runs = "the backward" if read.before == 1 else f"the {read.before} backwards"
        return [run.finding(
            "unused_parameter", "error", tensor, watched.site,
            f"{runs} before the read at {read.site} did not reach {tensor}: it takes part only in the losses of later "
            "backwards, so its .grad was None there, and the gradients gathered after each backward differ in length "
            f"(the script died on that: {error}).",
            "keep it out of the tensors whose gradients are gathered after each backward (step it with an optimizer "
            "of its own, or keep it on the loss that uses it), or gather a zero gradient where a backward leaves it "
            "None (torch.zeros_like(p) instead of skipping it).", related={"symptom": read.site})]
    return []
