"""`new_parameter`: ``nn.Parameter(...)`` wrapped a computed tensor, or a leaf with ``requires_grad=False``, making a
fresh leaf. Told where its source then missed a gradient through it (a cut), and where it wrapped a view of a parameter
that trains as well (``nn.Parameter(encoder.weight.t())``, weights meant to be tied): two leaves over one memory, each
learning only from its own uses."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Event
from gradcheck_l2c.records import Finding

KIND = "new_parameter"


def describe(event: Event, tensor: str) -> tuple[str, str]:
    if event.detail == "nn.Parameter(requires_grad=False)":  # a frozen copy of the values, not the tensor
        return (
            f"nn.Parameter(..., requires_grad=False) wrapped {tensor}: the parameter shares its values but is a new "
            "leaf that requires no gradient, so gradients stop at it.",
            "keep the tensor itself (an attribute, or register_buffer(name, tensor)) instead of wrapping it in "
            "nn.Parameter(requires_grad=False).",
        )
    return (
        f"nn.Parameter(...) wrapped a tensor computed from {tensor}: the parameter is a new leaf "
        "and gradients stop at it.",
        "keep the computed tensor as a plain tensor (or pass it through torch.func.functional_call) "
        "instead of wrapping it in nn.Parameter.",
    )


def scan(run) -> list[Finding]:
    """Parameters wrapped around a view of a parameter that trains too: one finding at each wrap."""
    found = []
    told = {(finding.kind, finding.line, finding.file) for finding in run.findings}
    for event in run.record.events(KIND):
        if event.detail != "nn.Parameter()" or event.key not in run.keys or event.site is None \
                or (KIND, event.site.line, event.site.file) in told:
            continue
        source = run.record.watched_at(event.key)
        twin = _sharing_memory(run, source) if source.ever_grad else None
        if twin is None:
            continue
        name, other = source.name, twin.name
        found.append(run.finding(
            KIND, "error", name, event.site,
            f"nn.Parameter(...) here wrapped a view of {name}: {other} shares its memory but is a second leaf, so "
            f"the gradients that go through {other} never reach {name} (the two are not tied: each learns only from "
            f"its own uses, and a step over both moves the shared memory twice).",
            "use the parameter itself where the tied weight is needed (F.linear(x, encoder.weight.t()) in forward, or "
            "assign the same Parameter when the shapes match) instead of wrapping a view of it in nn.Parameter.",
            event.count, related={"defined": twin.site} if twin.site is not None else None))
    return found


def _sharing_memory(run, source):
    """Another parameter that got gradients and lives in ``source``'s memory, if any."""
    tensor = source.tensor
    if tensor is None:
        return None
    memory = tensor.untyped_storage().data_ptr()
    return next((other for other in run.record.watched() if other.key != source.key and other.is_parameter
                 and other.ever_grad and other.tensor is not None
                 and other.tensor.untyped_storage().data_ptr() == memory), None)
