"""Turn a render plan into a ``graphviz.Digraph``: labels, colours, clusters, cut boxes and the legend.

Every label is an HTML-like label built from escaped text, so names holding quotes, braces, ``<>``,
backslashes or newlines cannot break the DOT source.
"""
from __future__ import annotations

import html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import graphviz

from gradcheck_l2c.present.draw.plan import GraphIndex, Item, Plan
from gradcheck_l2c.records import Finding
from gradcheck_l2c.rules import label_of

# Fill colours; torchviz's where it has one (loss, ops, leaves).
LOSS = "darkolivegreen1"
OP = "lightgrey"
LEAF = "lightblue"
REACHED = "palegreen"
MISSING = "tomato"
CUT = "mistyrose"
CHAIN = "gainsboro"
FOLDED = "white"
CUT_EDGE = "red"

NODE_STYLE = {"style": "filled", "shape": "box", "fontsize": "10", "height": "0.2", "fontname": "monospace",
              "fillcolor": OP}
GRAPH_STYLE = {"ranksep": "0.3", "fontname": "monospace", "fontsize": "10"}

#: How each finding kind is named in a cut box.
_MAX_TEXT = 80
_CONTROL = {c: " " for c in (*range(0x20), 0x7F)}


def esc(text: Any, limit: int = _MAX_TEXT) -> str:
    """``text`` made safe inside an HTML-like graphviz label: one line, shortened, entities escaped."""
    text = str(text).translate(_CONTROL)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return html.escape(text, quote=True)


def html_label(*lines: str) -> str:
    """An HTML-like label from already escaped lines (empty ones dropped)."""
    return "<" + "<BR/>".join(line for line in lines if line) + ">"


def small(escaped: str) -> str:
    return f'<FONT POINT-SIZE="8">{escaped}</FONT>' if escaped else ""


def shape_text(tensor: Any) -> str:
    return "(" + ", ".join(str(d) for d in tensor.shape) + ")"


@dataclass
class Watched:
    """A watched tensor as drawn: its name, its node number (if it has an autograd node), its colour."""

    name: str
    tensor: Any
    node: int | None
    reached: bool


@dataclass
class Scene:
    """Everything the drawing needs besides the plan: names, watched tensors, cuts, the loss."""

    index: GraphIndex
    plan: Plan
    names: dict[int, str]  # id(tensor) -> name, for leaves
    watched: list[Watched]
    cuts: Sequence[Any]  # records.Cut
    root: int | None
    loss: Any  # the loss tensor, or None when rendering from a node
    from_root: bytearray  # 1 for the nodes the loss reaches; the others lie on a cut-off path
    caption: list[str] = field(default_factory=list)


def site_of(node: Any) -> str:
    """``basename:line`` of the forward code that created ``node``, when the tracer recorded it."""
    metadata = getattr(node, "metadata", None)
    site = metadata.get("gradcheck_site") if metadata is not None else None
    if not site:
        return ""
    filename, line = site
    return f"{os.path.basename(str(filename))}:{line}"


def module_of(node: Any) -> str | None:
    """The module path the tracer recorded for ``node``, if any."""
    metadata = getattr(node, "metadata", None)
    module = metadata.get("gradcheck_module") if metadata is not None else None
    return module if isinstance(module, str) and module else None


def draw(scene: Scene) -> graphviz.Digraph:
    """The ``Digraph`` of ``scene``: boxes grouped by module, watched tensors coloured, cuts in red."""
    dot = graphviz.Digraph(name="autograd", node_attr=NODE_STYLE, graph_attr=GRAPH_STYLE)
    watched_at = {w.node: w for w in scene.watched if w.node is not None}
    groups: dict[str | None, list[tuple[str, str, dict[str, str]]]] = {}
    for number, item in enumerate(scene.plan.items):
        label, attrs, group = _box(scene, item, watched_at)
        groups.setdefault(group, []).append((f"i{number}", label, attrs))
    for number, w in enumerate(scene.watched):
        if w.node is None:
            label = html_label(f"<B>{esc(w.name)}</B>", esc(shape_text(w.tensor)), small("requires_grad=False"))
            groups.setdefault("", []).append((f"t{number}", label, _watched_style(w)))
    for number, (group, boxes) in enumerate(groups.items()):
        if group is None:
            for key, label, attrs in boxes:
                dot.node(key, label, **attrs)
            continue
        cluster = "cluster_missing" if group == "" else f"cluster_m{number}"
        with dot.subgraph(name=cluster) as sub:
            if group == "":
                sub.attr(label=html_label("not reached by the loss"), color=CUT_EDGE, style="dashed",
                         fontcolor=CUT_EDGE)
            else:
                sub.attr(label=html_label(esc(group)), color="gray50", style="rounded,dashed")
            for key, label, attrs in boxes:
                sub.node(key, label, **attrs)
    items = scene.plan.items
    cut_off = [not any(scene.from_root[node] for node in item.nodes) and item.kind != "folded" for item in items]
    for a, b in scene.plan.edges:
        if cut_off[a] and cut_off[b]:
            attrs = {"color": CUT_EDGE}
        elif items[a].kind == "folded" or items[b].kind == "folded":
            attrs = {"style": "dotted"}
        else:
            attrs = {}
        dot.edge(f"i{a}", f"i{b}", **attrs)
    _draw_loss(dot, scene)
    _draw_cuts(dot, scene)
    _draw_legend(dot)
    if scene.caption:
        left = "".join(f'{esc(line, 200)}<BR ALIGN="LEFT"/>' for line in scene.caption)
        dot.attr(label=f"<{left}>", labelloc="b", labeljust="l")
    return dot


def _watched_style(w: Watched) -> dict[str, str]:
    if w.reached:
        return {"fillcolor": REACHED, "color": "darkgreen", "penwidth": "2"}
    return {"fillcolor": MISSING, "color": CUT_EDGE, "penwidth": "2"}


def _box(scene: Scene, item: Item, watched_at: dict[int, Watched]) -> tuple[str, dict[str, str], str | None]:
    """Label, attributes and cluster (``None``: none, ``""``: not reached) of one plan item."""
    index = scene.index
    if item.kind == "folded":
        top = ", ".join(f"{esc(op, 30)} ×{count:,}" for op, count in item.ops.most_common(3))
        label = html_label(f"<B>… {item.count:,} autograd nodes folded …</B>", small(top))
        return label, {"fillcolor": FOLDED, "style": "filled,dashed"}, None
    if item.kind == "chain":
        first, last = item.nodes[0], item.nodes[-1]
        sites = [site_of(index.nodes[first]), site_of(index.nodes[last])]
        sites_text = " … ".join(dict.fromkeys(s for s in sites if s))
        label = html_label(f"<B>{len(item.nodes):,} ops: {esc(index.types[first])} … {esc(index.types[last])}</B>",
                           small(esc(sites_text)), small(_absorbed_text(scene, item.absorbed)))
        return label, {"fillcolor": CHAIN}, item.module
    node_number = item.nodes[0]
    node = index.nodes[node_number]
    watched = watched_at.get(node_number)
    if index.is_leaf(node_number):
        variable = node.variable
        name = watched.name if watched else scene.names.get(id(variable), "")
        label = html_label(f"<B>{esc(name)}</B>" if name else "", esc(shape_text(variable)))
        attrs = _watched_style(watched) if watched else {"fillcolor": LEAF}
        return label, attrs, "" if watched and not watched.reached else None
    title = f"<B>{esc(index.types[node_number])}</B>"
    if watched:
        heading = f"<B>{esc(watched.name)}</B> {esc(shape_text(watched.tensor))}"
        label = html_label(heading, title, small(esc(site_of(node))))
        return label, _watched_style(watched), "" if not watched.reached else item.module
    return html_label(title, small(esc(site_of(node)))), {}, item.module


def _absorbed_text(scene: Scene, leaves: list[int]) -> str:
    if not leaves:
        return ""
    names = []
    for leaf in leaves[:3]:
        variable = scene.index.nodes[leaf].variable
        names.append(scene.names.get(id(variable)) or shape_text(variable))
    more = ", …" if len(leaves) > 3 else ""
    noun = "leaf" if len(leaves) == 1 else "leaves"
    return esc(f"+ {len(leaves)} {noun}: {', '.join(names)}{more}", 120)


def _draw_loss(dot: graphviz.Digraph, scene: Scene) -> None:
    loss = scene.loss
    if loss is None and scene.root is None:
        return
    lines = ["<B>loss</B>"]
    if loss is not None:
        lines.append(esc(shape_text(loss)))
        if scene.root is None:
            lines.append(small("no grad_fn: nothing in it requires grad"))
    dot.node("loss", html_label(*lines), fillcolor=LOSS)
    root_item = scene.plan.item_for(scene.root)
    if root_item is not None:
        dot.edge(f"i{root_item}", "loss")


def cut_text(finding: Finding) -> str:
    """What a cut box says first: the operation and where, e.g. ``.item()  l2c.py:87``."""
    where = f"{os.path.basename(finding.file)}:{finding.line}" if finding.file else ""
    text = f"{label_of(finding.kind)}  {where}".strip()
    return f"{text}  ×{finding.count}" if finding.count > 1 else text


def _sites(cuts: Sequence[Any]) -> list[list[Any]]:
    """The cuts grouped by site (kind, file, line): one box each, whichever tensors it starved."""
    sites: dict[tuple[str, str, int], list[Any]] = {}
    for cut in cuts:
        sites.setdefault(_site_key(cut.finding), []).append(cut)
    return list(sites.values())


def _site_lines(cuts: Sequence[Any]) -> list[str]:
    """A cut box's label lines: what and where, with the count, or each tensor's count when they differ."""
    findings = list({cut.finding.tensor: cut.finding for cut in cuts}.values())
    first = findings[0]
    counts = {finding.count for finding in findings}
    lines = [f"<B>{esc(cut_text(first) if len(counts) == 1 else cut_text(replace(first, count=1)))}</B>",
             small(esc(first.code.strip(), 60))]
    if len(counts) > 1:
        lines.append(small(esc(", ".join(f"×{f.count} {f.tensor}" for f in findings), 120)))
    return lines


def _draw_cuts(dot: graphviz.Digraph, scene: Scene) -> None:
    by_name = {w.name: (number, w) for number, w in enumerate(scene.watched)}
    plan, index = scene.plan, scene.index
    sites = _sites(scene.cuts)
    boxes = {_site_key(cut.finding): f"cut{number}" for number, site in enumerate(sites) for cut in site}
    for number, site in enumerate(sites):
        key = f"cut{number}"
        starts: list[str] = []
        for cut in site:
            found = by_name.get(cut.finding.tensor)
            if cut.source is not None:
                item = plan.item_for(index.position(cut.source))
                start = f"i{item}" if item is not None else None
            elif found is not None:
                w_number, w = found
                item = plan.item_for(w.node)
                start = f"i{item}" if item is not None else (f"t{w_number}" if w.node is None else None)
            else:
                start = None
            if start is not None and start not in starts:
                starts.append(start)
        lines = _site_lines(site)
        if not starts:
            tensors = ", ".join(dict.fromkeys(cut.finding.tensor for cut in site))
            lines.append(small(esc(f"tensor: {tensors}")))
        dot.node(key, html_label(*lines), fillcolor=CUT, color=CUT_EDGE, style="filled,bold")
        for start in starts:
            dot.edge(start, key, color=CUT_EDGE, style="dashed", penwidth="2")
        reentries = dict.fromkeys(plan.item_for(index.position(node)) for cut in site for node in cut.reentry)
        for item in reentries:
            if item is not None:
                dot.edge(key, f"i{item}", color=CUT_EDGE, style="dashed", penwidth="2")
        # one story per cause: the cut the same values went through before this one leads here
        for earlier in dict.fromkeys(boxes.get(_site_key(cut.after)) for cut in site if cut.after is not None):
            if earlier is not None and earlier != key:
                dot.edge(earlier, key, color=CUT_EDGE, style="dashed", penwidth="2")


def _site_key(finding: Finding) -> tuple[str, str, int]:
    return finding.kind, finding.file, finding.line


_LEGEND_ROWS = (
    (LOSS, "loss"),
    (OP, "backward op (file:line of its forward code)"),
    (LEAF, "leaf tensor"),
    (REACHED, "watched: the loss reaches it"),
    (MISSING, "watched: NO gradient from this loss"),
    (CUT, "cut: where the value left the graph (red dashed); red edges: the path cut off"),
    (CHAIN, "N ops: a chain collapsed into one box"),
    (FOLDED, "… folded: a summary of many nodes"),
)


def _draw_legend(dot: graphviz.Digraph) -> None:
    rows = "".join(f'<TR><TD BGCOLOR="{colour}" ALIGN="LEFT">{esc(text)}</TD></TR>' for colour, text in _LEGEND_ROWS)
    table = f'<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="2" CELLPADDING="3">{rows}</TABLE>>'
    with dot.subgraph(name="cluster_legend") as legend:
        legend.attr(label="legend", color="gray70", style="rounded")
        legend.node("legend", table, shape="plain", style="")
