"""``--grad-stats`` in the HTML report: each weight's gradient norm over the backwards and its update-to-weight
ratio over the optimizer's steps, drawn as inline SVG (log scale, one line per weight, flagged weights thicker),
with a legend; no script and no image file, so it shows from ``file://`` and in a notebook alike."""
from __future__ import annotations

import html
import math
from collections.abc import Sequence

from gradcheck_l2c.records import LayerGradients

_e = html.escape
WIDTH, HEIGHT = 560, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 12, 24, 36
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
            "#17becf")
#: The most points drawn per line; longer runs are thinned evenly (the last point always kept).
MAX_POINTS = 400


def grad_stats_section(layers: Sequence[LayerGradients]) -> str:
    """The report's gradient health section, or nothing without ``--grad-stats`` (or without a weight)."""
    rows = [layer for layer in layers if len(layer.shape) >= 2]
    if not rows:
        return ""
    colours = {layer.name: _COLOURS[i % len(_COLOURS)] for i, layer in enumerate(rows)}
    norms = _chart("gradient norm per weight", "backward",
                   [(layer, layer.backwards, layer.grad_norms) for layer in rows], colours)
    updates = _chart("|update| / |weight| per optimizer step", "optimizer step",
                     [(layer, layer.steps, layer.update_ratios) for layer in rows], colours)
    legend = "".join(f'<li><span class="swatch" style="background:{colours[layer.name]}"></span>'
                     f"<code>{_e(layer.name)}</code>{_flags(layer)}</li>" for layer in rows)
    return (f'<h2>Gradient health</h2><div class="gradplots">{norms}{updates}</div>'
            f'<ul class="legend">{legend}</ul>')


def _flags(layer: LayerGradients) -> str:
    return f' <b class="flagged">{_e(", ".join(layer.flags))}</b>' if layer.flags else ""


def _chart(title: str, axis: str, lines: list[tuple[LayerGradients, Sequence[int], Sequence[float]]],
           colours: dict[str, str]) -> str:
    """One log-scale chart; a chart without any positive finite value says so instead."""
    drawn = [(layer, xs, ys) for layer, xs, ys in lines if xs]
    values = [y for _, _, ys in drawn for y in ys if 0 < y < math.inf]
    xs_all = [x for _, xs, _ in drawn for x in xs]
    if not values:
        return f'<figure class="gradplot"><figcaption>{_e(title)}: nothing to draw</figcaption></figure>'
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    high = max(high, low + 1)
    first, last = min(xs_all), max(xs_all)
    inner_w, inner_h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM

    def x_at(x: float) -> float:
        return _LEFT + (inner_w * (x - first) / (last - first) if last > first else inner_w / 2)

    def y_at(y: float) -> float:
        exponent = math.log10(y) if y > 0 else low  # a zero sits on the floor
        return _TOP + inner_h * (high - exponent) / (high - low)

    parts = [f'<svg width="{WIDTH}" height="{HEIGHT}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{_e(title)}">',
             f'<rect x="{_LEFT}" y="{_TOP}" width="{inner_w}" height="{inner_h}" fill="#fff" stroke="#bbb"/>']
    step = max(1, math.ceil((high - low) / 8))
    for exponent in range(low, high + 1, step):
        y = y_at(10.0 ** exponent)
        parts.append(f'<line x1="{_LEFT}" x2="{WIDTH - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>'
                     f'<text x="{_LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="10">1e{exponent}</text>')
    for x in sorted({first, last}):
        parts.append(f'<text x="{x_at(x):.1f}" y="{HEIGHT - _BOTTOM + 14}" text-anchor="middle" '
                     f'font-size="10">{x}</text>')
    parts.append(f'<text x="{_LEFT + inner_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle" font-size="11">'
                 f"{_e(axis)}</text>")
    for layer, xs, ys in drawn:
        points = " ".join(f"{x_at(x):.1f},{y_at(y):.1f}" for x, y in _thinned(xs, ys) if y < math.inf)
        width = 2.5 if layer.flags else 1.2
        parts.append(f'<polyline fill="none" stroke="{colours[layer.name]}" stroke-width="{width}" points="{points}">'
                     f"<title>{_e(layer.name)}</title></polyline>")
    parts.append("</svg>")
    return f'<figure class="gradplot">{"".join(parts)}<figcaption>{_e(title)} (log scale)</figcaption></figure>'


def _thinned(xs: Sequence[int], ys: Sequence[float]) -> list[tuple[int, float]]:
    pairs = list(zip(xs, ys))
    if len(pairs) <= MAX_POINTS:
        return pairs
    every = math.ceil(len(pairs) / MAX_POINTS)
    return pairs[::every] + ([pairs[-1]] if (len(pairs) - 1) % every else [])
