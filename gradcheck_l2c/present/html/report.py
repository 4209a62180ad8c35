"""Write the HTML report: ``index.html``, one page per source file and the graphs' images, in one folder that
works from ``file://`` (no server, no network); or the same report as one block for a notebook cell.

Every text taken from the run (file names, source lines, tensor names, messages) is HTML-escaped; graphs are
shown as images, so nothing in them runs.
"""
from __future__ import annotations

import html
import json
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gradcheck_l2c.fix.diffs import with_fix_diffs
from gradcheck_l2c.present.html import assets
from gradcheck_l2c.present.html.gradplot import grad_stats_section
from gradcheck_l2c.present.html.index import index_body
from gradcheck_l2c.present.html.links import Links
from gradcheck_l2c.present.html.marks import mark
from gradcheck_l2c.present.html.source import source_listing
from gradcheck_l2c.present.textreport import display_file, summary_line
from gradcheck_l2c.records import CapturedGraph, Finding, LayerGradients, WatchedTensor

TITLE = "gradcheck-l2c: missing gradients"
#: Lines shown around each marked line in the notebook's inline report.
INLINE_CONTEXT = 3


def write_html_report(out_dir: str | Path, findings: Sequence[Finding], watched: Sequence[WatchedTensor],
                      graphs: Sequence[CapturedGraph] = (), *, full: bool = False,
                      layers: Sequence[LayerGradients] = ()) -> list[Path]:
    """Write the report into ``out_dir``; returns the pages written, ``index.html`` first.

    The graphs are drawn as ``graph-<n>.svg`` (``.dot`` sources and a note when Graphviz is missing); each
    mechanical fix is shown as a diff beside its line (with LibCST installed); ``layers`` (``--grad-stats``)
    are plotted on the index.
    """
    from gradcheck_l2c.present.draw.render import draw_graphs

    findings = with_fix_diffs(findings)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sections = draw_graphs(graphs, findings, out, fmt="svg", full=full) if graphs else []
    marked = mark(findings, sections)
    links = Links(marked.files)
    index_path = out / "index.html"
    body = index_body(marked, summary_line(findings, watched), links, sections) + grad_stats_section(layers)
    index_path.write_text(_document(TITLE, f"<h1>{html.escape(TITLE)}</h1>\n{body}", links), encoding="utf-8")
    written = [index_path]
    for source in marked.files.values():
        name = display_file(source.path)
        heading = (f'<p><a href="{links.index_page}">&larr; all findings</a></p>'
                   f"<h1><code>{html.escape(name)}</code></h1>")
        page = out / source.page
        page.write_text(_document(f"{name} - gradcheck-l2c", heading + source_listing(source, links), links),
                        encoding="utf-8")
        written.append(page)
    return written


def inline_html(findings: Sequence[Finding], watched: Sequence[WatchedTensor],
                graphs: Sequence[CapturedGraph] = ()) -> str:
    """The report as one HTML block (for a notebook): the index, then each file's marked lines with a few
    lines around them; graphs are embedded, ids are unique to this block."""
    from gradcheck_l2c.present.draw.render import draw_graphs

    findings = with_fix_diffs(findings)
    with tempfile.TemporaryDirectory(prefix="gradcheck-html-") as folder:
        sections = draw_graphs(graphs, findings, Path(folder), fmt="svg") if graphs else []
        marked = mark(findings, sections)
        links = Links(marked.files, one_document=True, prefix=f"gc{uuid.uuid4().hex[:8]}-")
        parts = [index_body(marked, summary_line(findings, watched), links, sections)]
        for source in marked.files.values():
            parts.append(f'<h3 id="{links.file_id(source)}"><code>{html.escape(display_file(source.path))}</code></h3>')
            parts.append(source_listing(source, links, context=INLINE_CONTEXT))
    return (f'<div class="gradcheck-report"><style>{_scoped_style()}</style>' + "\n".join(parts)
            + _script(links) + "</div>")


def _document(title: str, body: str, links: Links) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{assets.STYLE}</style></head>\n"
            f"<body>\n{body}\n{_script(links)}</body></html>\n")


def _script(links: Links) -> str:
    return "<script>" + assets.SCRIPT.replace("__PREFIX__", json.dumps(links.prefix)) + "</script>"


def _scoped_style() -> str:
    """The style sheet limited to the report's block, so a notebook's own styles are left alone."""
    rules = []
    for rule in assets.STYLE.strip().split("}"):
        if "{" not in rule:
            continue
        selectors, declarations = rule.split("{", 1)
        scoped = ", ".join(".gradcheck-report" if s.strip() == "body" else f".gradcheck-report {s.strip()}"
                           for s in selectors.split(","))
        rules.append(f"{scoped} {{{declarations}}}")
    return "\n".join(rules)


def html_summary(written: Sequence[Any]) -> str:
    """One line on what ``write_html_report`` wrote."""
    pages = len(written) - 1
    return f"wrote the HTML report ({pages} source {'page' if pages == 1 else 'pages'}); open {written[0]}"
