"""The report's index: a summary, the findings in a table that sorts and filters in the browser, the source
files with their counts, and the graphs."""
from __future__ import annotations

import html
from collections.abc import Sequence

from gradcheck_l2c.present.draw.page import Section
from gradcheck_l2c.present.html.fixes import verdict
from gradcheck_l2c.present.html.links import Links
from gradcheck_l2c.present.html.marks import Entry, Marked
from gradcheck_l2c.present.textreport import display_file, display_place

_e = html.escape
_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
_COLUMNS = (("severity", "number"), ("kind", ""), ("code", ""), ("tensor", ""), ("where", ""), ("count", "number"),
            ("what happened", ""))


def index_body(marked: Marked, summary: str, links: Links, sections: Sequence[Section]) -> str:
    """The index's content (inside ``<body>``)."""
    parts = [f'<p class="summary">{_e(summary)}</p>']
    if marked.entries:
        parts += [_controls(marked, links), _table(marked, links)]
    else:
        parts.append("<p>No findings.</p>")
    if marked.files:
        parts.append(_files(marked, links))
    if sections and not links.one_document:
        parts.append("<h2>Graphs</h2>")
        for section in sections:
            names = ", ".join(f"<code>{_e(name)}</code>" for name in section.missing)
            parts.append(f"<h3>Graph {section.number}</h3>")
            if names:
                parts.append(f"<p>Not reached by this loss: {names}</p>")
            parts.append(links.graph(section))
    return "\n".join(parts)


def _controls(marked: Marked, links: Links) -> str:
    p = _e(links.prefix)
    kinds = sorted({entry.finding.kind for entry in marked.entries})
    severities = sorted({entry.finding.severity for entry in marked.entries}, key=lambda s: _SEVERITY_RANK.get(s, 3))
    kind_options = "".join(f'<option value="{_e(kind)}">{_e(kind)}</option>' for kind in kinds)
    severity_options = "".join(f'<option value="{_e(s)}">{_e(s)}</option>' for s in severities)
    return (f'<div class="controls"><label>filter <input id="{p}filter-text" type="search" '
            f'placeholder="text in any column"></label>'
            f'<label>kind <select id="{p}filter-kind"><option value="">all</option>{kind_options}</select></label>'
            f'<label>severity <select id="{p}filter-severity"><option value="">all</option>{severity_options}'
            f'</select></label><span>showing <span id="{p}shown">{len(marked.entries)}</span> of '
            f"{len(marked.entries)}</span></div>")


def _table(marked: Marked, links: Links) -> str:
    header = "".join(f'<th data-type="{kind}">{_e(title)}</th>' if kind else f"<th>{_e(title)}</th>"
                     for title, kind in _COLUMNS)
    rows = "\n".join(_row(entry, links) for entry in marked.entries)
    return (f'<table class="findings" id="{_e(links.prefix)}findings"><thead><tr>{header}</tr></thead>'
            f"<tbody>\n{rows}\n</tbody></table>")


def _row(entry: Entry, links: Links) -> str:
    f = entry.finding
    if f.file and f.line > 0:
        where = f'<a href="{_e(links.line(f.file, f.line))}">{_e(display_place(f.file, f.line))}</a>'
    else:
        where = _e(display_file(f.file)) if f.file else ""
    fix = f'<div class="fix"><b>fix:</b> {_e(f.fix)}</div>' if f.fix else ""
    return (f'<tr id="{_e(links.row_id(entry))}" data-kind="{_e(f.kind)}" data-severity="{_e(f.severity)}">'
            f'<td class="sev {_e(f.severity)}" data-value="{_SEVERITY_RANK.get(f.severity, 3)}">{_e(f.severity)}</td>'
            f"<td>{_e(f.kind)}</td><td>{_e(entry.rule)}</td><td><code>{_e(f.tensor)}</code></td>"
            f'<td data-value="{_e(f.file)}:{f.line:08d}">{where}</td><td data-value="{f.count}">{f.count}</td>'
            f"<td>{_e(f.message)}{fix}{verdict(f)}</td></tr>")


def _files(marked: Marked, links: Links) -> str:
    rows = []
    for source in marked.files.values():
        cuts = [entry.finding.severity for marks in source.lines.values() for entry in marks.cuts]
        counts = "".join(f"<td>{cuts.count(severity)}</td>" for severity in ("error", "warning", "info"))
        rows.append(f'<tr><td><a href="{_e(links.page(source))}">{_e(display_file(source.path))}</a></td>{counts}</tr>')
    return ('<h2>Source files</h2><table class="findings files"><thead><tr><th>file</th><th>errors</th>'
            f"<th>warnings</th><th>notes</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
