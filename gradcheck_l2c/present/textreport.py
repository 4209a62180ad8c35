"""The trace's text report, for people.

The text starts with one summary line; then, for every watched tensor that got no gradient (tensors
whose causes are the same places share one section), its causes in the order the tracer met them (the order the values flowed), each with ``file:line``, the
code line, what happened and the fix; then the other findings, the same event on several tensors
folded into one entry. Findings a ``# gradcheck: ignore`` comment suppressed are only counted.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Sequence

from gradcheck_l2c.records import Finding, WatchedTensor
from gradcheck_l2c.rules import CAUSES

_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
_SGR = {"error": "1;31", "warning": "1;33", "info": "36", "bold": "1", "fix": "32"}
_NAMES_IN_SUMMARY = 3
_TENSORS_PER_ENTRY = 4
_TENSORS_UNEXPLAINED = 10
_REFUSALS = ("autograd_error", "inplace_saved")  # findings about a backward PyTorch refused: its gradients never came
_NAMES_IN_WATCH_WARNING = 12
_IPYTHON_INPUT = re.compile(r"<ipython-input-(\d+)-[0-9a-f]+>")


def summary_line(
    findings: Sequence[Finding], watched: Sequence[WatchedTensor], *, color: bool = False
) -> str:
    """One line: how many watched tensors got no gradient (and which), the findings by severity, and how
    many were suppressed."""
    return f"gradcheck-l2c: {_watched_summary(watched, color)}; {_severity_counts(findings, color)}"


def format_report(
    findings: Sequence[Finding],
    watched: Sequence[WatchedTensor],
    *,
    color: bool = False,
    max_findings: int | None = None,
    verbose: bool = False,
) -> str:
    """The text report. ``max_findings`` caps the entries shown; ``verbose`` adds notes
    (``info`` findings) and the list of tensors that did get a gradient. A tensor whose causes were
    all suppressed is not listed."""
    all_findings = findings
    paint = _Painter(color)
    budget = _Budget(max_findings)
    silenced = {finding.tensor for finding in findings if finding.suppressed and finding.kind in CAUSES}
    findings = [finding for finding in findings if not finding.suppressed]
    explained = {finding.tensor for finding in findings if finding.kind in CAUSES}
    missing = [tensor for tensor in watched if tensor.got_grad is False
               and (tensor.name in explained or tensor.name not in silenced)]
    missing_names = {tensor.name for tensor in missing}
    others = [finding for finding in findings if not _is_cause(finding, missing_names)]
    notes = [finding for finding in others if finding.severity == "info"]
    if not verbose:
        others = [finding for finding in others if finding.severity != "info"]

    lines = [summary_line(all_findings, watched, color=color)]
    lines += _missing_sections(missing, findings, paint, budget, verbose)
    lines += _other_findings(others, paint, budget, "Other findings:" if missing else "Findings:")
    if budget.left_out:
        more = " more" if budget.shown else ""
        lines += ["", f"{budget.left_out}{more} {_plural(budget.left_out, 'finding')} not shown "
                      f"(at most {max_findings} entries are listed)."]
    if notes and not verbose:
        lines += ["", f"{len(notes)} {_plural(len(notes), 'note')} not shown (verbose shows them)."]
    if verbose:
        reached = [tensor.name for tensor in watched if tensor.got_grad]
        unjudged = [tensor.name for tensor in watched if tensor.got_grad is None]
        if reached:
            lines += ["", "Got a gradient: " + ", ".join(reached)]
        if unjudged:
            lines += ["", "Never reached by a backward: " + ", ".join(unjudged)]
    return "\n".join(lines) + "\n"


class _Budget:
    """Counts the entries listed against ``max_findings``, and the findings left out."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.shown = 0
        self.left_out = 0

    def take(self, findings: int = 1) -> bool:
        """Whether one more entry (of ``findings`` findings) may be listed."""
        if self.limit is not None and self.shown >= self.limit:
            self.left_out += findings
            return False
        self.shown += 1
        return True


def _is_cause(finding: Finding, missing_names: set[str]) -> bool:
    """Listed under its tensor's "got no gradient" section: a cause, not a note or a side bug."""
    return finding.tensor in missing_names and finding.kind in CAUSES and finding.severity != "info"


def _missing_sections(missing: Sequence[WatchedTensor], findings: Sequence[Finding], paint: _Painter,
                      budget: _Budget, verbose: bool) -> list[str]:
    """One section per tensor without gradient, its causes numbered; tensors whose causes are the same
    places (the layers of one module behind one `.detach()`) share a section; those without a cause together."""
    lines: list[str] = []
    unexplained = []
    sections: dict[tuple, list[tuple[WatchedTensor, list[Finding]]]] = {}
    for tensor in missing:
        causes = [finding for finding in findings if finding.tensor == tensor.name and _is_cause(finding, {tensor.name})]
        if not causes:
            unexplained.append(tensor)
            continue
        places = tuple((f.kind, f.file, f.line, f.severity) for f in causes)
        sections.setdefault(places, []).append((tensor, causes))
    for members in sections.values():
        names = ", ".join(f"{paint(tensor.name, 'bold')} {_shape(tensor.shape)}"
                          for tensor, _ in members[:_TENSORS_PER_ENTRY])
        if len(members) > _TENSORS_PER_ENTRY:
            names += f" and {len(members) - _TENSORS_PER_ENTRY} more"
        entries = []
        for number, group in enumerate(zip(*(causes for _, causes in members)), 1):
            if budget.take(len(group)):
                entries += _entry(list(group), paint, prefix=f"{number}. ", with_tensor=False)
        if entries:  # a heading with nothing under it (``max_findings=0``) says nothing
            lines += ["", f"{names} got no gradient; causes in the order the values flowed:", *entries]
    if unexplained:
        listed = unexplained if verbose else unexplained[:_TENSORS_UNEXPLAINED]
        names = ", ".join(f"{paint(tensor.name, 'bold')} {_shape(tensor.shape)}" for tensor in listed)
        if len(unexplained) > len(listed):
            names += f" and {len(unexplained) - len(listed)} more"
        refused = any(f.kind in _REFUSALS and f.severity == "error" for f in findings)
        heading = ("Got no gradient: a backward PyTorch refused (below) did not give it, or the loss does not use them:"
                   if refused else "Got no gradient, and no finding explains why (does the loss use them?):")
        lines += ["", heading, f"  {names}"]
    return lines


def _other_findings(findings: Sequence[Finding], paint: _Painter, budget: _Budget, title: str) -> list[str]:
    """The remaining findings, errors first, the same event on several tensors folded into one entry."""
    entries: list[str] = []
    for group in sorted(_fold(findings), key=lambda group: _SEVERITY_RANK.get(group[0].severity, 3)):
        if budget.take(len(group)):
            entries += _entry(group, paint, prefix="- ", with_tensor=True)
    return ["", title, *entries] if entries else []


def listed(findings: Iterable[Finding], verbose: bool = False) -> list[Finding]:
    """The findings a one-line-per-finding output lists, by file, line and column: none suppressed,
    notes only when ``verbose``."""
    shown = [finding for finding in findings
             if not finding.suppressed and (verbose or finding.severity != "info")]
    return sorted(shown, key=lambda finding: (finding.file, finding.line, finding.column or 0))


def display_path(path: str) -> str:
    """``path`` relative to the current folder when it lies below it, else unchanged."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if relative.startswith(os.pardir) else relative


def display_place(path: str, line: int) -> str:
    """``path:line`` as :func:`display_path` writes it, or ``cell [1], line 8`` for a notebook cell."""
    cell = _cell_number(path)
    return f"cell [{cell}], line {line}" if cell is not None else f"{display_path(path)}:{line}"


def display_file(path: str) -> str:
    """``path`` as :func:`display_path` writes it, or ``cell [1]`` for a notebook cell."""
    cell = _cell_number(path)
    return f"cell [{cell}]" if cell is not None else display_path(path)


def _cell_number(path: str) -> str | None:
    """The execution count of the IPython cell compiled under the file name ``path``, or ``None``."""
    match = _IPYTHON_INPUT.fullmatch(path)
    if match:
        return match.group(1)
    if "IPython" not in sys.modules:
        return None
    shell = sys.modules["IPython"].get_ipython()
    name = shell.compile.format_code_name(path) if shell is not None else None
    if name is None or not name[1].startswith("In["):  # ("Cell", "In[8]") for a cell this shell ran
        return None
    return name[1][3:-1]


class _Painter:
    """Wraps text in ANSI colour codes, or leaves it alone when colour is off."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, style: str) -> str:
        if not self.enabled or style not in _SGR:
            return text
        return f"\x1b[{_SGR[style]}m{text}\x1b[0m"


def _watched_summary(watched: Sequence[WatchedTensor], color: bool) -> str:
    paint = _Painter(color)
    total = len(watched)
    if not total:
        return "no tensor was watched"
    missing = [tensor.name for tensor in watched if tensor.got_grad is False]
    unjudged = sum(1 for tensor in watched if tensor.got_grad is None)
    tensors = _plural(total, "tensor")
    if unjudged == total:
        return f"no backward reached the {total} watched {tensors}"
    if missing:
        names = ", ".join(paint(name, "bold") for name in missing[:_NAMES_IN_SUMMARY])
        if len(missing) > _NAMES_IN_SUMMARY:
            names += f" and {len(missing) - _NAMES_IN_SUMMARY} more"
        text = f"{len(missing)} of {total} watched {tensors} got no gradient ({names})"
    elif unjudged:
        text = f"{total - unjudged} of {total} watched {tensors} got a gradient"
    elif total == 1:
        text = "the watched tensor got a gradient"
    else:
        text = f"all {total} watched tensors got a gradient"
    if unjudged:
        text += f", {unjudged} never reached by a backward"
    return text


def _severity_counts(findings: Sequence[Finding], color: bool) -> str:
    paint = _Painter(color)
    parts = []
    for severity, word in (("error", "error"), ("warning", "warning"), ("info", "note")):
        count = sum(1 for finding in findings if finding.severity == severity and not finding.suppressed)
        if count:
            parts.append(paint(f"{count} {_plural(count, word)}", severity))
    if not parts:
        parts.append("no findings")
    suppressed = sum(1 for finding in findings if finding.suppressed)
    if suppressed:
        parts.append(f"{suppressed} suppressed")
    return ", ".join(parts)


def _fold(findings: Iterable[Finding]) -> list[list[Finding]]:
    """Group findings that are the same event (kind, place, severity) on different tensors."""
    groups: dict[tuple[str, str, int, str], list[Finding]] = {}
    for finding in findings:
        key = (finding.kind, finding.file, finding.line, finding.severity)
        groups.setdefault(key, []).append(finding)
    return list(groups.values())


def _entry(group: list[Finding], paint: _Painter, *, prefix: str, with_tensor: bool) -> list[str]:
    """The lines of one entry: ``file:line: severity: kind``, the code, what happened, the fix."""
    first = group[0]
    indent = "  " + " " * len(prefix)
    head = (
        f"  {prefix}{paint(display_place(first.file, first.line), 'bold')}: "
        f"{paint(first.severity, first.severity)}: {first.kind}"
    )
    counts = {finding.count for finding in group}
    if len(counts) > 1:  # a different number of times per tensor: each its own (as JSON has it), or the range
        if len(group) <= _TENSORS_PER_ENTRY:
            head += " (" + ", ".join(f"×{finding.count} {finding.tensor}" for finding in group) + ")"
        else:
            head += f" (×{min(counts)} to ×{max(counts)})"
    elif max(counts) > 1:
        head += f" (×{max(counts)})"
    ranks = sorted({rank for finding in group for rank in finding.ranks})
    if ranks:
        head += f" [{_plural(len(ranks), 'rank')} {', '.join(map(str, ranks))}]"
    processes = list(dict.fromkeys(process for finding in group for process in finding.processes))
    if processes:
        head += f" [{'process' if len(processes) == 1 else 'processes'} {', '.join(processes)}]"
    names = [finding.tensor for finding in group if finding.tensor]
    if with_tensor and names:
        head += ": " + ", ".join(names[:_TENSORS_PER_ENTRY])
        if len(names) > _TENSORS_PER_ENTRY:
            head += f" and {len(names) - _TENSORS_PER_ENTRY} more"
    lines = ["", head]
    if first.code:
        lines.append(f"{indent}    {first.code.strip()}")
    lines.append(f"{indent}{first.message}")
    if first.fix:
        lines.append(f"{indent}{paint('fix:', 'fix')} {first.fix}")
    for place in first.related:
        lines.append(f"{indent}{place.role}: {display_place(place.file, place.line)}"
                     + (f": {place.code.strip()}" if place.code else ""))
    if first.fix_diff:
        hunks = first.fix_diff.splitlines()
        lines.append(f"{indent}{paint('patch:', 'fix')}")
        lines += [f"{indent}    {line}" for line in hunks[next(
            (number for number, line in enumerate(hunks) if line.startswith("@@")), 0):]]
    for status, note in dict.fromkeys((finding.verified, finding.verify_note) for finding in group if finding.verified):
        lines.append(f"{indent}{paint(status + ':', 'fix' if status == 'verified' else 'warning')} {note}")
    return lines


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(size) for size in shape) + ("," if len(shape) == 1 else "") + ")"


def _plural(count: int, word: str) -> str:
    return word if count == 1 else word + "s"


def unmatched_message(patterns: Sequence[str], names: Sequence[str], level: str = "error") -> str:
    """The line for ``--watch`` patterns that matched nothing, listing the names that exist."""
    quoted = ", ".join(repr(pattern) for pattern in patterns)
    which = "pattern" if len(patterns) == 1 else "patterns"
    text = f"gradcheck-l2c: {level}: --watch {which} {quoted} matched no tensor"
    if not names:
        return text + "; no tensor that requires grad was seen at all."
    shown = ", ".join(names[:_NAMES_IN_WATCH_WARNING])
    if len(names) > _NAMES_IN_WATCH_WARNING:
        shown += f" and {len(names) - _NAMES_IN_WATCH_WARNING} more"
    return f"{text}; the tensors seen were: {shown}"
