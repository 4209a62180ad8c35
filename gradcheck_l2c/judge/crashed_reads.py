"""A loop that read ``.grad`` of every tensor it was given and died on the None of one that does not require grad: a
hand-written update or clipping over ``model.parameters()`` with a pruning mask or a frozen layer among them."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "optimizer"


def crashed_loop_read(run) -> list[Finding]:
    """The finding at the loop's line, when the script died there on a frozen leaf's None gradient."""
    read = run.record.empty_reads.crashed
    if read is None:
        return []
    if read.key is not None and read.key in run.keys:
        tensor = run.name(read.key)
        why = f"{tensor} does not require grad (it was frozen)"
    elif read.made is not None:
        tensor = f"the Parameter made at {read.made}"
        why = f"{tensor} was made with requires_grad=False"
    else:
        tensor = "a tensor"
        why = "one of them does not require grad"
    return [run.finding(
        KIND, "warning", tensor, read.site,
        f"this line reads the .grad of each tensor the loop is given, and {why}: no backward gives it a gradient, so "
        "its .grad is None and the script died here on it.",
        "skip the tensors without a gradient (`if p.grad is None: continue`), or loop over those that learn: "
        "[p for p in model.parameters() if p.requires_grad].",
        related={"defined": read.made})]
