"""Tests of gradcheck_l2c.present.draw: what the drawn graph contains (boxes, colours, cut edges), at any size."""
from __future__ import annotations

import dataclasses
import html
import inspect
import re
import shutil
import subprocess
from dataclasses import dataclass, field

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.present.draw.dot import (
    CHAIN,
    CUT,
    CUT_EDGE,
    FOLDED,
    LEAF,
    LOSS,
    MISSING,
    REACHED,
)
from gradcheck_l2c.present.draw.render import (
    INSTALL_HINT,
    render,
    save_graph,
    write_render_dir,
)
from gradcheck_l2c.record.graph import grad_roots, iter_nodes, signature
from gradcheck_l2c.records import CapturedGraph, Cut, Finding

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")


# --- reading a Digraph back ------------------------------------------------------------------------------

@dataclass
class Box:
    key: str
    lines: list[str]
    attrs: dict[str, str]
    cluster: str | None

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


@dataclass
class Drawing:
    boxes: dict[str, Box] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    clusters: dict[str, dict[str, str]] = field(default_factory=dict)
    legend: dict[str, str] = field(default_factory=dict)  # colour -> meaning

    def find(self, text: str) -> list[Box]:
        return [box for box in self.boxes.values() if text in box.text]

    def one(self, text: str) -> Box:
        found = self.find(text)
        assert len(found) == 1, f"{len(found)} boxes contain {text!r}: {[b.text for b in found]}"
        return found[0]

    def titled(self, title: str) -> Box:
        found = [box for box in self.boxes.values() if box.lines and box.lines[0] == title]
        assert len(found) == 1, f"{len(found)} boxes titled {title!r}"
        return found[0]

    def linked(self, a: Box, b: Box) -> bool:
        return any(start == a.key and end == b.key for start, end, _ in self.edges)

    def edge(self, a: Box, b: Box) -> dict[str, str]:
        for start, end, attrs in self.edges:
            if start == a.key and end == b.key:
                return attrs
        raise AssertionError(f"no edge {a.text!r} -> {b.text!r}")

    def ops(self) -> list[Box]:
        return [b for b in self.boxes.values() if b.key.startswith("i")]


def _split_attrs(text: str) -> dict[str, str]:
    attrs = {}
    text = text.strip()
    while text:
        key, _, text = text.partition("=")
        if text.startswith("<"):
            depth = 0
            for end, char in enumerate(text):
                depth += (char == "<") - (char == ">")
                if depth == 0:
                    break
            value, text = text[1:end], text[end + 1:]
        elif text.startswith('"'):
            match = re.match(r'"((?:[^"\\]|\\.)*)"', text)
            value, text = match.group(1), text[match.end():]
        else:
            value, _, text = text.partition(" ")
        attrs[key.strip()] = value
        text = text.strip()
    return attrs


def _label_lines(label: str) -> list[str]:
    text = re.sub(r"<BR[^>]*>", "\n", label)
    text = html.unescape(re.sub(r"<[^>]*>", "", text))
    return [line.strip() for line in text.split("\n") if line.strip()]


def parse(dot) -> Drawing:
    """The boxes, edges and clusters of a Digraph, read back from its DOT source."""
    drawing = Drawing()
    cluster = None
    for line in dot.source.splitlines():
        stripped = line.strip()
        if m := re.match(r"subgraph (\w+) \{$", stripped):
            cluster = m.group(1)
            drawing.clusters[cluster] = {}
        elif stripped == "}":
            cluster = None
        elif m := re.match(r"^(\w+) -> (\w+)(?: \[(.*)\])?$", stripped):
            drawing.edges.append((m.group(1), m.group(2), _split_attrs(m.group(3) or "")))
        elif m := re.match(r"^(\w+) \[(.*)\]$", stripped):
            if m.group(1) in ("graph", "node", "edge"):
                continue
            attrs = _split_attrs(m.group(2))
            if m.group(1) == "legend":
                rows = re.findall(r'BGCOLOR="([^"]+)"[^>]*>([^<]*)<', attrs["label"])
                drawing.legend = {colour: html.unescape(text) for colour, text in rows}
                continue
            drawing.boxes[m.group(1)] = Box(m.group(1), _label_lines(attrs.get("label", "")), attrs, cluster)
        elif cluster and (m := re.match(r"^(\w+)=(.*)$", stripped)):
            drawing.clusters[cluster] = _split_attrs(stripped)
    return drawing


def _line() -> int:
    return inspect.currentframe().f_back.f_lineno


# --- the seed problem: alpha's value leaves through .item() and comes back through load_state_dict ---------

class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.fc2 = nn.Linear(3, 2)
        self.alpha = nn.Parameter(torch.randn(2, 2))

    def forward(self, x):
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def l2c_round():
    """One L2C aggregation the way the seed question wrote it: the mixing weight leaves as a float."""
    torch.manual_seed(0)
    model = TinyCNN()
    theta = {name: value.clone() for name, value in model.state_dict().items()}
    delta = {name: torch.randn_like(value) for name, value in theta.items()}
    weights = torch.softmax(model.alpha[0], dim=0)
    w_01 = weights[1]
    item_line = _line() + 1
    theta_next = {name: theta[name] - w_01.item() * delta[name] for name in theta}
    w_01.grad_fn.metadata["gradcheck_site"] = (__file__, item_line - 2)  # what record_sites=True stores
    model.load_state_dict(theta_next)
    loss = F.nll_loss(model(torch.randn(5, 4)), torch.tensor([0, 1, 0, 1, 1]))
    finding = Finding("item", "error", "TinyCNN.alpha", __file__, item_line, "w_01.item() * delta[name]",
                      "TinyCNN.alpha's mixing weight became a Python float here.", "keep it a tensor")
    reloaded = tuple(grad_roots([p])[0] for name, p in model.named_parameters() if name != "alpha")
    cut = Cut(finding, source=w_01.grad_fn, reentry=reloaded)
    tensors = {f"TinyCNN.{name}": p for name, p in model.named_parameters()}
    graph = CapturedGraph(loss.grad_fn, tensors, ("TinyCNN.alpha",), (cut,), signature(loss.grad_fn))
    return graph, item_line


def test_seed_alpha_is_red_and_the_item_cut_names_its_line():
    graph, item_line = l2c_round()
    drawing = parse(render(graph))

    alpha = drawing.one("TinyCNN.alpha")
    assert alpha.attrs["fillcolor"] == MISSING
    assert alpha.cluster == "cluster_missing"
    for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"):
        assert drawing.one(f"TinyCNN.{name}").attrs["fillcolor"] == REACHED

    cut = drawing.one(".item()")
    assert cut.lines[0] == f".item()  test_render.py:{item_line}"
    assert cut.attrs["fillcolor"] == CUT
    source = drawing.titled("SelectBackward0")
    assert f"test_render.py:{item_line - 2}" in source.lines
    into_cut = drawing.edge(source, cut)
    assert into_cut["color"] == CUT_EDGE and into_cut["style"] == "dashed"
    for name in ("fc1.weight", "fc2.bias"):
        back_in = drawing.edge(cut, drawing.one(f"TinyCNN.{name}"))
        assert back_in["color"] == CUT_EDGE and back_in["style"] == "dashed"
    softmax = drawing.one("2 ops: SelectBackward0 … SoftmaxBackward0")  # alpha[0], then softmax
    assert drawing.edge(alpha, softmax)["color"] == CUT_EDGE  # the path that was cut off is red
    assert drawing.edge(softmax, source)["color"] == CUT_EDGE
    assert [end for start, end, _ in drawing.edges if start == drawing.titled("NllLossBackward0").key] == ["loss"]


def test_one_box_per_cut_site_with_each_tensors_count_and_no_box_for_notes():
    graph, item_line = l2c_round()
    (cut,) = graph.cuts
    alpha = dataclasses.replace(cut, finding=dataclasses.replace(cut.finding, count=60))
    other = dataclasses.replace(cut, finding=dataclasses.replace(cut.finding, tensor="TinyCNN.fc1.weight", count=66))
    note = Cut(Finding("inplace_saved", "info", "TinyCNN.alpha", __file__, item_line - 1, "w[0] = 1",
                       "an in-place write autograd records", "nothing to change here"), source=cut.source)
    drawing = parse(render(graph, findings=[alpha, other, note]))
    box = drawing.one(".item()")
    assert box.lines[0] == f".item()  test_render.py:{item_line}"  # no single count: they differ
    assert box.lines[-1] == "×60 TinyCNN.alpha, ×66 TinyCNN.fc1.weight"  # as the text report and JSON say
    assert not drawing.find("in-place") and not drawing.find("test_render.py:" + str(item_line - 1))
    assert len([b for b in drawing.boxes.values() if b.key.startswith("cut")]) == 1


def test_full_draws_each_tensor_once_when_a_cut_names_its_reentry_twice():
    graph, _ = l2c_round()
    (cut,) = graph.cuts
    twice = dataclasses.replace(cut, reentry=cut.reentry + cut.reentry)
    drawing = parse(render(graph, findings=[twice], full=True))
    for name in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "alpha"):
        drawing.one(f"TinyCNN.{name}")  # exactly one box each


# --- colours, names, labels ------------------------------------------------------------------------------

def test_watched_tensors_are_green_when_reached_and_red_beside_the_graph_when_not():
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    frozen = torch.randn(2)
    loss = (a * 2).sum()
    drawing = parse(render(loss, watch={"a": a, "b": b, "frozen": frozen}))

    assert drawing.one("a\n(3)").attrs["fillcolor"] == REACHED
    assert drawing.one("a\n(3)").cluster is None
    for name in ("b", "frozen"):
        box = drawing.one(f"{name}\n")
        assert box.attrs["fillcolor"] == MISSING
        assert box.cluster == "cluster_missing"
    assert "requires_grad=False" in drawing.one("frozen").lines
    assert drawing.one("loss").attrs["fillcolor"] == LOSS
    assert "NO gradient" in drawing.legend[MISSING] and "reaches" in drawing.legend[REACHED]
    assert {LOSS, LEAF, CUT, CHAIN, FOLDED} <= drawing.legend.keys()


def test_leaves_are_named_from_params_like_torchviz():
    model = nn.Sequential(nn.Linear(2, 3))
    stray = torch.ones(3, requires_grad=True)
    loss = (model(torch.ones(1, 2)) * stray).sum()
    drawing = parse(render(loss, params=dict(model.named_parameters())))

    weight = drawing.one("0.weight")
    assert weight.lines == ["0.weight", "(3, 2)"]
    assert weight.attrs["fillcolor"] == LEAF
    assert drawing.linked(weight, drawing.one("TBackward0"))
    unnamed = [box for box in drawing.find("(3)") if box.attrs.get("fillcolor") == LEAF and box.lines == ["(3)"]]
    assert len(unnamed) == 1  # the stray leaf: named by nothing, drawn by its shape
    assert drawing.one("0.bias").lines == ["0.bias", "(3)"]


def test_a_list_of_watched_tensors_is_named_from_params():
    model = nn.Linear(2, 1)
    loss = model(torch.ones(1, 2)).sum()
    drawing = parse(render(loss, params=model, watch=[model.weight, torch.zeros(1, requires_grad=True)]))
    assert drawing.one("weight\n").attrs["fillcolor"] == REACHED
    assert drawing.one("watched[1]").attrs["fillcolor"] == MISSING
    assert not drawing.find("bias")  # not watched: off the drawn paths


def test_the_tracers_missing_verdict_wins_over_reachability():
    a = torch.randn(2, requires_grad=True)
    hidden = a * 2  # a non-leaf: in the graph, but its .grad stays None without retain_grad()
    loss = hidden.sum()
    graph = CapturedGraph(loss.grad_fn, {"a": a, "hidden": hidden}, ("hidden",), (), signature(loss.grad_fn))
    drawing = parse(render(graph))
    hidden_box = drawing.one("hidden")
    assert hidden_box.attrs["fillcolor"] == MISSING and "MulBackward0" in hidden_box.lines
    assert drawing.linked(drawing.one("a\n"), hidden_box)
    assert drawing.one("a\n").attrs["fillcolor"] == REACHED


def test_finding_without_source_is_drawn_from_the_watched_tensor():
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3, requires_grad=True)
    loss = a.sum()
    finding = Finding("detach", "error", "b", "/home/u/train.py", 12, "b.detach()", "detached", "drop detach")
    drawing = parse(render(loss, watch={"a": a, "b": b}, findings=[finding]))

    cut = drawing.one(".detach()")
    assert cut.lines[0] == ".detach()  train.py:12"
    assert drawing.edge(drawing.one("b\n"), cut)["style"] == "dashed"


def test_chains_collapse_into_one_box_named_by_first_and_last_op():
    x = torch.randn(2, requires_grad=True)
    y = x + 1
    for _ in range(30):
        y = torch.sin(y)
    y = y * 3
    drawing = parse(render(y.sum(), watch={"x": x}))

    chain = drawing.one("ops:")
    assert chain.lines[0] == "32 ops: AddBackward0 … MulBackward0"
    assert chain.attrs["fillcolor"] == CHAIN
    assert drawing.linked(drawing.one("x\n"), chain)
    assert drawing.linked(chain, drawing.one("SumBackward0"))
    assert not drawing.find("SinBackward0")


def test_chains_break_at_module_boundaries_and_boxes_group_by_module():
    x = torch.randn(2, requires_grad=True)
    y = x
    for step in range(6):
        y = y * 2
        y.grad_fn.metadata["gradcheck_module"] = "Net.block1" if step < 3 else 'Net.a"b<c>'
    drawing = parse(render(y.sum(), watch={"x": x}))

    chains = drawing.find("3 ops: MulBackward0 … MulBackward0")
    assert len(chains) == 2
    labels = {drawing.clusters[box.cluster]["label"] for box in chains}
    assert labels == {"Net.block1", "Net.a&quot;b&lt;c&gt;"}


def test_only_paths_between_watched_tensors_and_the_loss_are_drawn():
    a = torch.randn(2, requires_grad=True)
    other = torch.randn(2, requires_grad=True)
    loss = (torch.exp(a) + torch.cos(other)).sum()
    drawing = parse(render(loss, watch={"a": a}))

    assert drawing.one("ExpBackward0")
    assert not drawing.find("CosBackward0")
    assert "paths between the watched tensors and the loss" in render(loss, watch={"a": a}).source


def test_big_graphs_fold_into_a_summary_that_counts_what_it_folded():
    leaves = [torch.randn(1, requires_grad=True) for _ in range(60)]
    loss = sum(torch.exp(leaf) for leaf in leaves)
    dot = render(loss, max_nodes=20)
    drawing = parse(dot)

    folded = [box for box in drawing.ops() if box.attrs.get("fillcolor") == FOLDED]
    assert folded
    folded_count = sum(int(re.search(r"([\d,]+) autograd nodes folded", b.text).group(1)) for b in folded)
    drawn_count = len(drawing.ops()) - len(folded)
    total = len(list(iter_nodes([loss.grad_fn])))
    assert folded_count + drawn_count == total
    assert len(drawing.ops()) <= 20
    assert f"summary: {folded_count:,} of {total} nodes folded" in dot.source
    assert drawing.one("loss")


def test_graph_deeper_than_ten_thousand_ops_renders_without_recursion():
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y + 1
    collapsed = parse(render(y, watch={"x": x}))
    assert collapsed.one("ops:").lines[0] == "19,999 ops: AddBackward0 … AddBackward0"
    full = parse(render(y, params={"x": x}, full=True))
    assert len(full.find("AddBackward0")) == 20_000
    assert len(full.edges) == 20_000 + 1  # 20,000 adds and x chained, then into the loss box


# --- escaping, files, Graphviz -----------------------------------------------------------------------------

def _odd_module() -> tuple[nn.Module, torch.Tensor]:
    module = nn.Module()
    module.register_parameter('a"b<c>', nn.Parameter(torch.ones(2)))
    module.register_parameter("x{y}\\", nn.Parameter(torch.ones(2)))
    weight, other = module.get_parameter('a"b<c>'), module.get_parameter("x{y}\\")
    return module, (weight * other).sum()


def test_names_with_quotes_braces_and_angle_brackets_are_escaped():
    module, loss = _odd_module()
    dot = render(loss, params=module, watch={"line\nbreak": torch.zeros(1)})
    drawing = parse(dot)

    assert drawing.one('a"b<c>').lines == ['a"b<c>', "(2)"]
    assert drawing.one("x{y}\\").lines == ["x{y}\\", "(2)"]
    assert drawing.one("line break").attrs["fillcolor"] == MISSING
    assert 'a"b<c>' not in dot.source and "a&quot;b&lt;c&gt;" in dot.source


@needs_dot
def test_escaped_names_render_with_graphviz(tmp_path):
    module, loss = _odd_module()
    saved = save_graph(render(loss, params=module), tmp_path / "odd", "svg")
    assert saved.note is None
    assert "a&quot;b&lt;c&gt;" in saved.path.read_text()


@needs_dot
def test_png_is_a_valid_image(tmp_path):
    graph, _ = l2c_round()
    saved = save_graph(render(graph), tmp_path / "seed", "png")
    assert saved.path == tmp_path / "seed.png"
    assert saved.path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    check = subprocess.run(["dot", "-Tpng", "-o", str(tmp_path / "again.png")], input=render(graph).source.encode(),
                           capture_output=True)
    assert check.returncode == 0, check.stderr


def test_without_dot_the_source_is_written_with_an_install_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    graph, _ = l2c_round()
    dot = render(graph)
    saved = save_graph(dot, tmp_path / "seed", "svg")

    assert saved.path == tmp_path / "seed.dot"
    assert saved.path.read_text() == dot.source
    assert saved.note == INSTALL_HINT and "apt-get install graphviz" in saved.note

    paths = write_render_dir([graph], [cut.finding for cut in graph.cuts], tmp_path / "out")
    assert [p.name for p in paths] == ["graph-1.dot", "index.html"]
    page = paths[-1].read_text()
    assert "brew install graphviz" in page and 'href="graph-1.dot"' in page


@needs_dot
def test_write_render_dir_lists_findings_with_their_images(tmp_path):
    graph, item_line = l2c_round()
    loose = torch.randn(2, requires_grad=True)
    other_loss = torch.randn(2, requires_grad=True).sum()
    note = Finding("no_grad", "error", "loose", "/u/l2c.py", 40, "with torch.no_grad(): <b>&</b>",
                   "computed under <no_grad>", "remove the no_grad block")
    second = CapturedGraph(other_loss.grad_fn, {"loose": loose}, ("loose",), (), signature(other_loss.grad_fn))
    findings = [graph.cuts[0].finding, note]
    paths = write_render_dir([graph, second], findings, tmp_path / "render")

    assert [p.name for p in paths] == ["graph-1.svg", "graph-2.svg", "index.html"]
    assert all(p.read_bytes().startswith(b"<?xml") for p in paths[:2])
    page = paths[-1].read_text()
    assert page.count("<tr><td") == 2
    assert f"test_render.py:{item_line}" in page
    assert "with torch.no_grad(): &lt;b&gt;&amp;&lt;/b&gt;" in page and "<b>&</b>" not in page
    assert 'src="graph-1.svg"' in page and 'src="graph-2.svg"' in page
    assert "torch.no_grad()" in paths[1].read_text()  # graph 2 draws the no_grad finding about its missing tensor


def test_unknown_format_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="svg, png, pdf, dot"):
        write_render_dir([], [], tmp_path, fmt="jpg")


def test_render_takes_a_node_and_rejects_anything_else():
    a = torch.randn(2, requires_grad=True)
    drawing = parse(render((a * 2).sum().grad_fn, params={"a": a}))
    assert drawing.one("a\n").attrs["fillcolor"] == LEAF
    assert drawing.one("loss").lines == ["loss"]
    with pytest.raises(UsageError, match="tensor, an autograd node or a CapturedGraph"):
        render("loss")


def test_a_loss_without_grad_fn_says_so_and_reaches_nothing():
    a = torch.randn(2, requires_grad=True)
    drawing = parse(render(torch.tensor(1.0), watch={"a": a}))
    assert "no grad_fn: nothing in it requires grad" in drawing.one("loss").lines
    assert drawing.one("a\n").attrs["fillcolor"] == MISSING
