"""A source file as the report shows it: every line numbered and linkable, marked lines coloured by severity,
and beside each marked line its findings (what happened, the fix in words and as a diff with its verdict, the
graph) or the finding it belongs to."""
from __future__ import annotations

import html
import linecache

from gradcheck_l2c.present.html.fixes import diff_block, verdict
from gradcheck_l2c.present.html.links import Links
from gradcheck_l2c.present.html.marks import Entry, LineMarks, SourceFile
from gradcheck_l2c.present.textreport import display_file, display_place

_e = html.escape


def source_listing(source: SourceFile, links: Links, *, context: int | None = None) -> str:
    """The file's lines as a table; ``context``: only marked lines and this many around them (the inline
    report). A file that cannot be read shows its marked lines' notes alone."""
    text = linecache.getlines(source.path)
    if not text:
        parts = [f"<p>The source of {_e(display_file(source.path))} could not be read.</p>",
                 '<table class="source">']
        for number in sorted(source.lines):
            parts += [_line_row(source, number, "", links), _notes_row(source, number, links)]
        return "\n".join(parts + ["</table>"])
    shown = _shown_lines(source, len(text), context)
    parts = ['<table class="source">']
    previous = 0
    for number in shown:
        if number > previous + 1:
            parts.append('<tr class="gap"><td class="n">&#8942;</td><td></td></tr>')
        previous = number
        parts.append(_line_row(source, number, text[number - 1].rstrip("\r\n"), links))
        if number in source.lines:
            parts.append(_notes_row(source, number, links))
    return "\n".join(parts + ["</table>"])


def _shown_lines(source: SourceFile, total: int, context: int | None) -> list[int]:
    if context is None:
        return list(range(1, total + 1))
    wanted = {number for line in source.lines for number in range(line - context, line + context + 1)}
    return sorted(number for number in wanted if 1 <= number <= total)


def _line_row(source: SourceFile, number: int, code: str, links: Links) -> str:
    marks = source.lines.get(number)
    css = f"line {marks.severity}" if marks else "line"
    anchor = links.line_id(source, number)
    return (f'<tr class="{css}" id="{_e(anchor)}"><td class="n"><a href="#{_e(anchor)}">{number}</a></td>'
            f'<td class="code"><pre>{_e(code) or " "}</pre></td></tr>')


def _notes_row(source: SourceFile, number: int, links: Links) -> str:
    marks: LineMarks = source.lines[number]
    first_with = {entry.finding.fix_diff: entry for entry in reversed(marks.cuts)}  # one diff shown once a line
    notes = [_finding_note(entry, links, show_diff=first_with[entry.finding.fix_diff] is entry) for entry in marks.cuts]
    notes += [_related_note(entry, place.role, links) for entry, place in marks.related]
    graphs = {id(entry.graph): entry.graph for entry in marks.cuts if entry.graph is not None}
    notes += [links.graph(section) for section in graphs.values()]
    return f'<tr class="notes-row"><td></td><td><div class="notes">{"".join(notes)}</div></td></tr>'


def _finding_note(entry: Entry, links: Links, *, show_diff: bool = True) -> str:
    f = entry.finding
    count = f" ×{f.count}" if f.count > 1 else ""
    tensor = f" on <code>{_e(f.tensor)}</code>" if f.tensor else ""
    parts = [f'<div class="finding {_e(f.severity)}" id="{_e(links.note_id(entry))}">',
             f'<div><span class="sev {_e(f.severity)}">{_e(f.severity)}</span> '
             f'<a href="{_e(links.row(entry))}">{_e(entry.rule)} {_e(f.kind)}</a>{count}{tensor}</div>',
             f"<div>{_e(f.message)}</div>"]
    if f.fix:
        parts.append(f'<div class="fix"><b>fix:</b> {_e(f.fix)}</div>')
    parts += [verdict(f), diff_block(f) if show_diff else ""]
    for place in f.related:
        if place.file and place.line > 0:
            where = display_place(place.file, place.line)
            parts.append(f'<div>{_e(place.role)}: <a href="{_e(links.line(place.file, place.line))}">{_e(where)}</a>'
                         "</div>")
    return "".join(parts) + "</div>"


def _related_note(entry: Entry, role: str, links: Links) -> str:
    f = entry.finding
    where = display_place(f.file, f.line)
    target = links.note(entry) if f.file and f.line > 0 else links.row(entry)
    tensor = f" (<code>{_e(f.tensor)}</code>)" if f.tensor else ""
    return (f'<div class="related-note">{_e(role)} of <a href="{_e(target)}">{_e(entry.rule)} {_e(f.kind)} at '
            f"{_e(where)}</a>{tensor}</div>")
