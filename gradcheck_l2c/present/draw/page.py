"""The ``index.html`` of a render folder: every finding in a table, then each captured graph's image.

All text from findings and tensor names is HTML-escaped; images are linked by file name so the
folder can be moved or zipped as a whole.
"""
from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gradcheck_l2c.records import Finding

_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin-bottom: 2em; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; vertical-align: top; }
td code, pre { font-family: monospace; }
.error { color: #b00; font-weight: bold; }
.warning { color: #a60; }
.note { background: #fff3cd; padding: 0.5em 1em; border-left: 4px solid #e0a800; }
img { max-width: 100%; border: 1px solid #ddd; }
"""


@dataclass(frozen=True)
class Section:
    """One captured graph on the page: its number, missing tensors, findings drawn in it, and image."""

    number: int
    missing: Sequence[str]
    findings: Sequence[Finding]
    image: Path
    note: str | None = None


def index_page(findings: Sequence[Finding], sections: Sequence[Section]) -> str:
    """The whole page as a string."""
    e = html.escape
    parts = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8"><title>gradcheck-l2c: missing gradients</title>',
             f"<style>{_STYLE}</style></head><body>", "<h1>Missing gradients</h1>"]
    if findings:
        parts.append("<table><tr><th>kind</th><th>tensor</th><th>where</th><th>code</th><th>what happened</th>"
                     "<th>fix</th></tr>")
        for f in findings:
            count = f" (×{f.count})" if f.count > 1 else ""
            parts.append(
                f'<tr><td class="{e(f.severity)}">{e(f.kind)}</td><td><code>{e(f.tensor)}</code></td>'
                f'<td title="{e(f.location)}">{e(os.path.basename(f.file))}:{f.line}{count}</td>'
                f"<td><code>{e(f.code)}</code></td><td>{e(f.message)}</td><td>{e(f.fix)}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No findings.</p>")
    if not sections:
        parts.append("<p>No graph was captured: no backward left a watched tensor without a gradient.</p>")
    for section in sections:
        parts.append(f"<h2>Graph {section.number}</h2>")
        if section.missing:
            names = ", ".join(f"<code>{e(name)}</code>" for name in section.missing)
            parts.append(f"<p>Not reached by this loss: {names}</p>")
        if section.findings:
            parts.append("<ul>" + "".join(
                f"<li>{e(f.kind)} at {e(os.path.basename(f.file))}:{f.line}: <code>{e(f.code)}</code></li>"
                for f in section.findings) + "</ul>")
        if section.note:
            parts.append(f'<p class="note">{e(section.note)}</p>')
        parts.append(_image(section.image))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _image(path: Path) -> str:
    name = html.escape(path.name)
    if path.suffix in (".svg", ".png"):
        return f'<p><a href="{name}"><img src="{name}" alt="autograd graph {name}"></a></p>'
    return f'<p><a href="{name}">{name}</a></p>'
