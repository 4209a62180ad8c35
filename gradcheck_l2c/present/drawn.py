"""Write a finished trace's drawn outputs, the ``--render`` folder and the ``--html`` report, then free its
graphs: all in a thread with a large stack, where walking and freeing deep graphs is safe."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gradcheck_l2c.present.draw.render import missing_dot_hint, render_summary, write_render_dir
from gradcheck_l2c.present.html.report import html_summary, write_html_report
from gradcheck_l2c.record.graph import call_with_large_stack


@dataclass(frozen=True)
class Drawn:
    """What was written, one line each, and the Graphviz install hint when images could not be drawn
    (shown even in quiet mode: the user asked for images and got none)."""

    lines: list[str]
    hint: str | None


def write_drawn(tracer: Any, *, render: str | None = None, html: str | None = None, fmt: str = "svg",
                full: bool = False) -> Drawn:
    """Draw ``tracer``'s graphs into the ``render`` folder and/or the ``html`` report's folder."""
    def draw() -> Drawn:
        try:
            lines = []
            if html:
                lines.append(html_summary(write_html_report(html, tracer.findings, tracer.watched, tracer.graphs,
                                                            full=full, layers=tracer.grad_stats)))
            if render:
                lines.append(render_summary(write_render_dir(tracer.graphs, tracer.findings, render, fmt=fmt,
                                                             full=full)))
            wants_images = bool(html and tracer.graphs) or bool(render and fmt != "dot" and tracer.graphs)
            return Drawn(lines, missing_dot_hint() if wants_images else None)
        finally:
            tracer.release_graphs()

    return call_with_large_stack(draw)
