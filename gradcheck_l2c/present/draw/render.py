"""Draw the autograd graph with the missing gradient path marked, at any size.

``render`` returns a ``graphviz.Digraph`` (shown inline in Jupyter) and never runs ``dot`` itself;
``save_graph`` and ``write_render_dir`` write images, falling back to the ``.dot`` source with an
install hint when Graphviz is missing. Conventions follow torchviz's ``make_dot`` (leaves light blue
and named from ``params``), but the walk is iterative, so graphs of any depth work.
"""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import graphviz
import torch

from gradcheck_l2c.errors import GradcheckError, UsageError
from gradcheck_l2c.present.draw import page
from gradcheck_l2c.present.draw.dot import Scene, Watched, draw, module_of
from gradcheck_l2c.present.draw.plan import GraphIndex, Plan, plan, select
from gradcheck_l2c.record.graph import grad_roots
from gradcheck_l2c.records import CapturedGraph, Cut, Finding
from gradcheck_l2c.rules import CAUSES

#: Beyond this many boxes (after collapsing chains) the drawing becomes a summary.
MAX_NODES = 400
FORMATS = ("svg", "png", "pdf", "dot")
INSTALL_HINT = (
    "Graphviz's `dot` program was not found, so only the .dot source was written. Install it with "
    "`apt-get install graphviz` (Debian/Ubuntu), `brew install graphviz` (macOS) or "
    "`conda install -c conda-forge graphviz`, then run `dot -Tsvg graph-1.dot -o graph-1.svg`."
)


def render(loss: Any, *, params: Any = None, watch: Any = None, findings: Sequence[Any] | None = None,
           full: bool = False, max_nodes: int = MAX_NODES) -> graphviz.Digraph:
    """The autograd graph of ``loss`` with the watched tensors and the cuts that starve them marked.

    ``loss`` is a tensor, an autograd node, or a ``CapturedGraph`` (whose tensors and cuts are the
    defaults for ``watch`` and ``findings``). ``params`` (a dict name -> tensor, a module, or a list
    of these) names the leaves; ``watch`` (the same forms, or a list of tensors) picks the tensors to
    mark; ``findings`` are ``Finding`` or ``Cut`` objects, drawn as one box per site (kind, file, line) on
    red dashed edges from the last node the tensors' values had to where they came back in; notes
    (``info`` findings, such as harmless in-place writes) are not cuts and are not drawn.

    By default only the paths between the watched tensors and the loss are drawn, chains of
    single-input/single-output ops become one "N ops" box, nodes are grouped by module when the
    tracer recorded one, and past ``max_nodes`` boxes the far parts fold into summary boxes.
    ``full=True`` draws every node.

    Colours (also in the drawing's legend):
      - darkolivegreen1: the loss
      - lightgrey: a backward op, labelled with the file:line of the forward code that made it
      - lightblue: a leaf tensor (not watched)
      - palegreen, green border: a watched tensor the loss reaches
      - tomato, red border: a watched tensor that gets NO gradient from this loss
      - mistyrose box on red dashed edges: a cut (``.item()  l2c.py:87``) and where its value re-entered
      - gainsboro: "N ops", a collapsed chain; white dashed: nodes folded into a summary
    """
    captured = loss if isinstance(loss, CapturedGraph) else None
    root_node, loss_tensor = _root(loss)
    names = _names(params)
    if watch is None and captured is not None:
        watch = captured.tensors
    watch_items = _watch_items(watch, names)
    for name, tensor in watch_items:
        names[id(tensor)] = name
    if findings is None:
        findings = captured.cuts if captured is not None else ()
    cuts = [cut for cut in _cuts(findings) if cut.finding.severity != "info"]  # notes cut nothing
    missing_names = set(captured.missing) if captured is not None else set()

    with torch.enable_grad():
        watch_nodes = [grad_roots([tensor])[0] if tensor.requires_grad else None for _, tensor in watch_items]
    sources = [cut.source for cut in cuts if cut.source is not None]
    reentries = [node for cut in cuts for node in cut.reentry]
    index = GraphIndex([n for n in (root_node, *sources, *reentries) if n is not None], extra=watch_nodes)
    root = index.position(root_node)
    from_root = index.reachable([root]) if root is not None else bytearray(len(index))
    watched = []
    for (name, tensor), node in zip(watch_items, watch_nodes):
        position = index.position(node)
        reached = position is not None and bool(from_root[position]) and name not in missing_names
        watched.append(Watched(name, tensor, position, reached))
    drawn, narrowed = _plan(index, root, from_root, watched, [index.position(n) for n in sources],
                            [index.position(n) for n in reentries], full, max_nodes)
    scene = Scene(index, drawn, names, watched, cuts, root, loss_tensor, from_root,
                  caption=_caption(index, drawn, full, narrowed, max_nodes))
    return draw(scene)


def _plan(index: GraphIndex, root: int | None, from_root: bytearray, watched: list[Watched], sources: list[int],
          reentries: list[int], full: bool, max_nodes: int) -> tuple[Plan, bool]:
    """The boxes to draw, and whether they were narrowed to the paths between watched tensors and the loss.

    Kept: the loss's paths to the watched tensors it reaches and to the cuts' re-entry nodes, and
    each cut's paths from its source to the watched tensors the loss does not reach.
    """
    with_node = [w for w in watched if w.node is not None]
    special = list(dict.fromkeys([
        *([root] if root is not None else []),
        *sources,
        *reentries,
        *(w.node for w in with_node if not w.reached),
        *(w.node for w in with_node if w.reached),
    ]))
    targets = [w.node for w in with_node if from_root[w.node]] + [p for p in reentries if from_root[p]]
    if full:
        keep = bytearray(b"\x01" * len(index))
    else:
        unreached = [w.node for w in with_node if not from_root[w.node]]
        keep = select(index, from_root, targets, sources, unreached)
    drawn = plan(index, keep, special, lambda i: module_of(index.nodes[i]), collapse=not full,
                 max_items=None if full else max_nodes)
    return drawn, not full and bool(targets)


def _root(loss: Any) -> tuple[Any, torch.Tensor | None]:
    """The autograd node a backward from ``loss`` starts at, and the loss tensor when there is one."""
    if isinstance(loss, CapturedGraph):
        return loss.root, None
    if isinstance(loss, torch.Tensor):
        if loss.grad_fn is None and not loss.requires_grad:
            return None, loss
        with torch.enable_grad():
            return grad_roots([loss])[0], loss
    if isinstance(loss, torch.autograd.graph.Node):
        return loss, None
    raise UsageError(f"render() needs a tensor, an autograd node or a CapturedGraph; got {type(loss).__name__}")


def _names(params: Any) -> dict[int, str]:
    """``id(tensor) -> name`` from a dict of tensors, a module's ``named_parameters()``, or a list of them."""
    names: dict[int, str] = {}
    for name, tensor in _named_tensors(params, "param"):
        names.setdefault(id(tensor), name)
    return names


def _named_tensors(value: Any, fallback: str) -> Iterable[tuple[str, torch.Tensor]]:
    if value is None:
        return
    if isinstance(value, torch.Tensor):
        yield fallback, value
    elif isinstance(value, torch.nn.Module):
        yield from value.named_parameters()
    elif isinstance(value, Mapping):
        for name, entry in value.items():
            if isinstance(entry, torch.Tensor):
                yield str(name), entry
            elif isinstance(entry, torch.nn.Module):
                yield from ((f"{name}.{sub}", tensor) for sub, tensor in entry.named_parameters())
            else:
                yield from ((f"{name}[{i}]", tensor) for i, tensor in enumerate(_tensor_list(entry, str(name))))
    elif isinstance(value, Iterable) and not isinstance(value, (str, bytes)):
        for number, entry in enumerate(value):
            yield from _named_tensors(entry, f"{fallback}[{number}]")
    else:
        raise UsageError(f"expected tensors, a module, or a dict of them; got {type(value).__name__}")


def _tensor_list(value: Any, name: str) -> list[torch.Tensor]:
    if isinstance(value, (list, tuple)) and all(isinstance(t, torch.Tensor) for t in value):
        return list(value)
    raise UsageError(f"{name!r} should map to a tensor or a list of tensors; got {type(value).__name__}")


def _watch_items(watch: Any, names: dict[int, str]) -> list[tuple[str, torch.Tensor]]:
    """The watched tensors with their names (a ``params`` name wins over a positional one), once each."""
    items: dict[int, tuple[str, torch.Tensor]] = {}
    positional = watch is not None and not isinstance(watch, (Mapping, torch.nn.Module))
    for name, tensor in _named_tensors(watch, "watched"):
        if positional:
            name = names.get(id(tensor), name)
        items.setdefault(id(tensor), (name, tensor))
    return list(items.values())


def _cuts(findings: Iterable[Any]) -> list[Cut]:
    cuts: dict[tuple[Any, ...], Cut] = {}
    for entry in findings:
        if isinstance(entry, Finding):
            entry = Cut(entry)
        if not isinstance(entry, Cut):
            raise UsageError(f"findings must be Finding or Cut objects; got {type(entry).__name__}")
        f = entry.finding
        cuts.setdefault((f.kind, f.tensor, f.file, f.line, id(entry.source)), entry)
    return list(cuts.values())


def _caption(index: GraphIndex, drawn: Plan, full: bool, narrowed: bool, max_nodes: int) -> list[str]:
    lines = []
    if narrowed and drawn.kept < len(index):
        lines.append(f"paths between the watched tensors and the loss: {drawn.kept:,} of {len(index):,} autograd nodes")
    chains = sum(1 for item in drawn.items if item.kind == "chain")
    if chains:
        lines.append(f"{chains:,} chain(s) of single-input ops collapsed into 'N ops' boxes")
    if drawn.folded:
        boxes = sum(1 for item in drawn.items if item.kind == "folded")
        lines.append(f"summary: {drawn.folded:,} of {drawn.kept:,} nodes folded into {boxes} box(es) to stay under "
                     f"{max_nodes} boxes; render(..., full=True) draws every node")
    return lines


@dataclass(frozen=True)
class SavedGraph:
    """Where a graph was written, and a note for the user when it is not the image asked for."""

    path: Path
    note: str | None = None


def missing_dot_hint() -> str | None:
    """How to install Graphviz when its ``dot`` program is missing; ``None`` when it is there."""
    return None if shutil.which("dot") else INSTALL_HINT


def check_format(fmt: str) -> str:
    """``fmt`` if it is an output format we write, else a ``UsageError`` naming the valid ones."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown image format {fmt!r}; use one of {', '.join(FORMATS)}")
    return fmt


def save_graph(dot: graphviz.Digraph, stem: str | Path, fmt: str = "svg", *,
               timeout: float | None = None) -> SavedGraph:
    """Write ``dot`` to ``stem.<fmt>``.

    Without Graphviz's ``dot`` program, or when it runs past ``timeout`` seconds, only ``stem.dot`` is
    written and the result's ``note`` says why (and how to install Graphviz).
    """
    check_format(fmt)
    stem = Path(stem)
    source_path = stem.with_name(stem.name + ".dot")
    source_path.write_text(dot.source, encoding="utf-8")
    if fmt == "dot":
        return SavedGraph(source_path)
    executable = shutil.which("dot")
    if executable is None:
        return SavedGraph(source_path, INSTALL_HINT)
    image_path = stem.with_name(f"{stem.name}.{fmt}")
    try:
        result = subprocess.run([executable, f"-T{fmt}", "-o", str(image_path), str(source_path)],
                                capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        return SavedGraph(source_path, INSTALL_HINT)
    except subprocess.TimeoutExpired:
        return SavedGraph(source_path, f"Graphviz took more than {timeout:g} s to lay out {source_path}; "
                                       f"only the .dot source was written (draw without full=True for a summary).")
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip().splitlines()
        raise GradcheckError(f"Graphviz could not draw {source_path}: {detail[-1] if detail else 'no message'}")
    source_path.unlink()
    return SavedGraph(image_path)


def write_render_dir(graphs: Sequence[CapturedGraph], findings: Sequence[Finding], out_dir: str | Path, *,
                     fmt: str = "svg", full: bool = False) -> list[Path]:
    """Write one image per captured graph (``graph-1.svg``, ...) and ``index.html`` listing the findings.

    The returned paths are the images (``.dot`` sources when Graphviz is missing) and then ``index.html``.
    """
    out = Path(out_dir)
    sections = draw_graphs(graphs, findings, out, fmt=fmt, full=full)
    index_path = out / "index.html"
    index_path.write_text(page.index_page(findings, sections), encoding="utf-8")
    return [section.image for section in sections] + [index_path]


def draw_graphs(graphs: Sequence[CapturedGraph], findings: Sequence[Finding], out: Path, *, fmt: str = "svg",
                full: bool = False) -> list[page.Section]:
    """Draw each captured graph into ``out/graph-<n>.<fmt>``; one ``Section`` each, naming the findings drawn.

    Each graph is drawn with its own cuts plus the other causes found for the tensors it is missing.
    """
    check_format(fmt)
    out.mkdir(parents=True, exist_ok=True)
    sections = []
    for number, captured in enumerate(graphs, 1):
        drawn_findings = {cut.finding for cut in captured.cuts}
        extra = [f for f in findings
                 if f.tensor in captured.missing and f.kind in CAUSES and f not in drawn_findings]
        saved = save_graph(render(captured, findings=[*captured.cuts, *extra], full=full), out / f"graph-{number}", fmt)
        sections.append(page.Section(number, captured.missing,
                                     [cut.finding for cut in captured.cuts] + extra, saved.path, saved.note))
    return sections


def render_summary(written: Sequence[Any]) -> str:
    """One line on what ``write_render_dir`` wrote (images, then the index page)."""
    images = len(written) - 1
    return f"drew {images} {'graph' if images == 1 else 'graphs'}; open {written[-1]}"
