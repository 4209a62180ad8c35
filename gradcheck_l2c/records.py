"""Plain records the tracer produces: findings and the watched tensors they are about."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
#: ``fail_on`` levels: a finding at least this severe fails; ``"never"`` only records.
FAIL_ON: tuple[str, ...] = (*SEVERITIES, "never")

@dataclass(frozen=True)
class Related:
    """Another place that belongs to a finding: the line where the symptom showed (``symptom``), where
    the tensor or object was made (``defined``), or where it was used (``used``)."""

    file: str
    line: int
    role: str
    code: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "role": self.role}


@dataclass(frozen=True)
class Finding:
    """One explained problem: what happened to which tensor, where in user code, and the fix.

    ``file`` is an absolute path and ``line`` 1-based: the line to change; ``column`` (1-based) is where
    the call starts on it, when known. ``count`` is how many times the same event (same kind, tensor and
    place) happened during the trace; ``related`` are other places that belong to it (where the symptom
    showed, where the tensor was defined). ``suppressed``: a ``# gradcheck: ignore`` comment on the line
    silenced it; it stays in JSON and SARIF but is not listed and fails nothing. ``ranks``: in a report
    merged from a distributed run, the ranks that found it (empty otherwise); ``processes``: for a finding from
    a child process the script started with multiprocessing, the processes that found it. ``fix_diff``: the fix as a
    unified diff when ``gradcheck-l2c fix`` found it mechanical; ``verified``: what ``fix --verify`` made of it
    (``verified``, ``not enough``, ``not checked``; empty when not asked), ``verify_note`` says why.
    """

    kind: str
    severity: Severity
    tensor: str
    file: str
    line: int
    code: str
    message: str
    fix: str
    count: int = 1
    related: tuple[Related, ...] = ()
    column: int | None = None
    suppressed: bool = False
    ranks: tuple[int, ...] = ()
    processes: tuple[str, ...] = ()
    fix_diff: str = ""
    verified: str = ""
    verify_note: str = ""

    def key(self) -> tuple[str, str, str, int]:
        """What makes two findings the same one (from two backward passes, or two ranks): the kind, the
        tensor and the line; counts, related places and ranks may differ."""
        return (self.kind, self.tensor, self.file, self.line)

    def to_dict(self) -> dict[str, Any]:
        document = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                    if f.name not in ("related", "ranks", "processes")}
        document["related"] = [place.to_dict() for place in self.related]
        if self.ranks:
            document["ranks"] = list(self.ranks)
        if self.processes:
            document["processes"] = list(self.processes)
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> "Finding":
        """The finding that ``to_dict`` (or ``dataclasses.asdict``) wrote."""
        fields = dict(document)
        fields["related"] = tuple(Related(**place) for place in fields.get("related", ()))
        fields["ranks"] = tuple(fields.get("ranks", ()))
        fields["processes"] = tuple(fields.get("processes", ()))
        return cls(**fields)

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class WatchedTensor:
    """A tensor the tracer judged: its user-facing name, shape, and whether it got a gradient.

    ``got_grad``: True when the last backward that reached it gave it a gradient; False when it
    never got one although a loss depended on its values through a cut; ``None`` when no backward
    involved it.
    """

    name: str
    shape: tuple[int, ...]
    got_grad: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "got_grad": self.got_grad, "shape": list(self.shape)}


@dataclass(frozen=True)
class LayerGradients:
    """``--grad-stats``: one parameter's gradient over the run. ``grad_norms[i]`` and ``weight_norms[i]`` at
    backward ``backwards[i]``; ``units`` rows of a weight (0 for a vector), ``dead`` of them never got a
    non-zero gradient; ``flags`` the kinds found about it (``vanishing_gradient``, ...); ``update_ratios[j]``
    the update of optimizer step ``steps[j]`` over the weight (|Δw| / |w|)."""

    name: str
    shape: tuple[int, ...]
    backwards: tuple[int, ...]
    grad_norms: tuple[float, ...]
    weight_norms: tuple[float, ...]
    units: int = 0
    dead: int = 0
    flags: tuple[str, ...] = ()
    steps: tuple[int, ...] = ()
    update_ratios: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "backwards": list(self.backwards),
                "grad_norms": list(self.grad_norms), "weight_norms": list(self.weight_norms),
                "steps": list(self.steps), "update_ratios": list(self.update_ratios),
                "units": self.units, "dead_units": self.dead, "flags": list(self.flags)}


@dataclass(frozen=True)
class Cut:
    """A finding placed on an autograd graph, for rendering.

    ``source`` is the last autograd node the watched tensor's values had before they left the
    graph (``None`` when the cut happened on the watched tensor itself); ``reentry`` are nodes of
    the loss's graph where those values came back in as constants (for example the parameters a
    ``load_state_dict`` overwrote). Both are ``torch.autograd.graph.Node`` objects. ``after`` is the cut the
    same values went through before this one (the ``.item()`` before the ``load_state_dict``).
    """

    finding: Finding
    source: Any = None
    reentry: tuple[Any, ...] = ()
    after: Finding | None = None  # the cut the values went through just before this one (one story per cause)


@dataclass(frozen=True)
class CapturedGraph:
    """The graph of one backward in which watched tensors got no gradient, kept for rendering.

    ``root`` is the loss's ``grad_fn``; ``tensors`` maps every watched name to its tensor;
    ``missing`` names the watched tensors this backward did not reach; ``signature`` identifies
    the graph's shape so that one image is drawn per distinct shape, not per iteration.
    """

    root: Any
    tensors: dict[str, Any]
    missing: tuple[str, ...]
    cuts: tuple[Cut, ...]
    signature: int


def fails(findings: Any, fail_on: str) -> bool:
    """Whether any finding that is not suppressed is at least as severe as ``fail_on`` (one of
    :data:`FAIL_ON`)."""
    if fail_on == "never":
        return False
    worst = SEVERITIES.index(fail_on)
    return any(SEVERITIES.index(finding.severity) <= worst for finding in findings if not finding.suppressed)
