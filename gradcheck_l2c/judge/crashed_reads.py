"""A ``.grad`` read that found None where the script then died on it (a TypeError or AttributeError on None): a loop
over every parameter reading the gradient of one that does not require grad (a pruning mask, a frozen layer) or of
one the loss never uses, or a gradient zeroed by hand before the first backward gave one."""
from __future__ import annotations

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
