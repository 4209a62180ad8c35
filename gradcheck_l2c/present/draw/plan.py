"""Graph work behind rendering: index an autograd graph, pick the part worth drawing, shrink it.

No graphviz here. Every pass is an explicit loop over flat arrays (never recursion), linear in the
number of nodes, so a million-op chain is indexed in a few seconds and drawn as a handful of boxes.
"""
from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gradcheck_l2c.record.graph import iter_nodes

ACCUMULATE = "AccumulateGrad"
HUB_DEGREE = 16  # when folding, boxes with more neighbours are drawn but not explored past


class GraphIndex:
    """The autograd nodes reachable from ``roots``, numbered, with their inputs as flat arrays.

    Node ``i``'s inputs (its ``next_functions``, deduplicated) are ``flat[starts[i]:starts[i + 1]]``.
    ``extra`` nodes not reachable from ``roots`` are numbered too, without inputs, to be drawn alone.
    """

    def __init__(self, roots: Iterable[Any], extra: Iterable[Any] = ()):
        nodes = list(iter_nodes({id(node): node for node in roots}.values()))  # a root given twice: one box
        pos = {id(node): i for i, node in enumerate(nodes)}
        walked = len(nodes)
        for node in extra:
            if node is not None and id(node) not in pos:
                pos[id(node)] = len(nodes)
                nodes.append(node)
        starts = array("q", [0])
        flat = array("q")
        number = pos.__getitem__
        for node in nodes[:walked]:
            children = [number(id(child)) for child, _ in node.next_functions if child is not None]
            flat.extend(dict.fromkeys(children) if len(children) > 1 else children)
            starts.append(len(flat))
        starts.extend([len(flat)] * (len(nodes) - walked))
        type_names: dict[type, str] = {}
        self.types = [type_names.get(type(node)) or type_names.setdefault(type(node), type(node).__name__)
                      for node in nodes]
        self.nodes = nodes
        self.starts = starts
        self.flat = flat
        self._pos = pos
        self._reverse: tuple[array, array] | None = None

    def __len__(self) -> int:
        return len(self.nodes)

    def position(self, node: Any) -> int | None:
        """The number of ``node`` (an autograd node object), or ``None`` when it is not indexed."""
        return self._pos.get(id(node)) if node is not None else None

    def is_leaf(self, i: int) -> bool:
        return self.types[i] == ACCUMULATE

    def reachable(self, sources: Iterable[int]) -> bytearray:
        """Mark every node reachable from ``sources`` along inputs (the sources included)."""
        return _flood(len(self.nodes), self.starts, self.flat, sources)

    def reaching(self, targets: Iterable[int]) -> bytearray:
        """Mark every node from which some node of ``targets`` is reachable (the targets included)."""
        rstarts, consumers = self._consumers()
        return _flood(len(self.nodes), rstarts, consumers, targets)

    def _consumers(self) -> tuple[array, array]:
        """The reverse of the input arrays (built once, on first use): who consumes node ``i``."""
        if self._reverse is None:
            n = len(self.nodes)
            starts, flat = self.starts, self.flat
            fill = array("q", bytes(8 * (n + 1)))
            for u in flat:
                fill[u + 1] += 1
            for i in range(n):
                fill[i + 1] += fill[i]
            rstarts = array("q", fill)
            consumers = array("q", bytes(8 * len(flat)))
            for v in range(n):
                for k in range(starts[v], starts[v + 1]):
                    u = flat[k]
                    consumers[fill[u]] = v
                    fill[u] += 1
            self._reverse = (rstarts, consumers)
        return self._reverse


def select(index: GraphIndex, from_root: bytearray, targets: Sequence[int], side_roots: Sequence[int],
           side_targets: Sequence[int]) -> bytearray:
    """Which nodes to draw: those on paths from the root to ``targets`` and from ``side_roots`` to ``side_targets``.

    ``from_root`` marks the nodes the root reaches; with no ``targets`` all of them are kept. The
    roots and targets themselves are always kept.
    """
    keep = _both(from_root, index.reaching(targets)) if targets else bytearray(from_root)
    if side_roots and side_targets:
        keep = _either(keep, _both(index.reachable(side_roots), index.reaching(side_targets)))
    for i in (*targets, *side_roots, *side_targets):
        keep[i] = 1
    return keep


def _both(a: bytearray, b: bytearray) -> bytearray:
    """Element-wise AND of two 0/1 masks, done as one big-integer operation."""
    value = int.from_bytes(a, "little") & int.from_bytes(b, "little")
    return bytearray(value.to_bytes(len(a), "little"))


def _either(a: bytearray, b: bytearray) -> bytearray:
    value = int.from_bytes(a, "little") | int.from_bytes(b, "little")
    return bytearray(value.to_bytes(len(a), "little"))


@dataclass(slots=True)
class Item:
    """One box to draw: a single node, a collapsed chain of nodes, or a summary of folded nodes.

    ``nodes`` lists a chain input side first; ``absorbed`` are leaves drawn inside a chain's box;
    ``count`` is how many autograd nodes the box stands for; ``ops`` counts their types when folded.
    """

    kind: str  # "node", "chain" or "folded"
    nodes: list[int]
    count: int
    module: str | None = None
    absorbed: list[int] = field(default_factory=list)
    ops: Counter | None = None


@dataclass
class Plan:
    """What to draw: boxes, edges between boxes (by position in ``items``), and what was folded."""

    items: list[Item]
    edges: list[tuple[int, int]]
    item_of: array  # node number -> item number, -1 when not drawn
    kept: int  # autograd nodes selected for drawing
    folded: int  # of those, how many went into summary boxes

    def item_for(self, node: int | None) -> int | None:
        if node is None or self.item_of[node] < 0:
            return None
        return self.item_of[node]


def plan(index: GraphIndex, keep: bytearray, special: Sequence[int], module_of: Callable[[int], str | None],
         *, collapse: bool, max_items: int | None) -> Plan:
    """Turn the kept nodes into boxes.

    With ``collapse``, chains of single-input/single-output nodes in one module become one box; if
    that still leaves more than ``max_items`` boxes, leaves used by one chain only move inside its box
    (which lets conv/batch-norm chains with their weights collapse too). If there are still too many,
    the boxes nearest the ``special`` nodes (earlier ones first) stay and the rest fold into summary
    boxes. ``special`` nodes are never collapsed, moved or folded away.
    """
    kept = [i for i, k in enumerate(keep) if k]
    for absorb in (False, True) if collapse else (False,):
        item_of = array("q", [-1]) * len(index)
        items: list[Item] = []
        if collapse:
            _collapse_chains(index, keep, kept, set(special), module_of, items, item_of, absorb=absorb)
        for v in kept:
            if item_of[v] < 0:
                item_of[v] = len(items)
                items.append(Item("node", [v], 1, module_of(v)))
        if max_items is None or len(items) <= max_items:
            break
    edges = _item_edges(index, keep, kept, item_of)
    result = Plan(items, edges, item_of, kept=len(kept), folded=0)
    if max_items is not None and len(items) > max_items:
        _fold(result, special, max_items, index.types)
    return result


def _collapse_chains(index: GraphIndex, keep: bytearray, kept: list[int], special: set[int],
                     module_of: Callable[[int], str | None], items: list[Item], item_of: array, *,
                     absorb: bool) -> None:
    starts, flat, types = index.starts, index.flat, index.types
    n = len(index)
    out_count = bytearray(n)  # kept consumers, counted up to 2
    consumer = array("q", [-1]) * n
    for v in kept:
        for k in range(starts[v], starts[v + 1]):
            u = flat[k]
            if keep[u] and out_count[u] < 2:
                out_count[u] += 1
                consumer[u] = v

    def absorbable(u: int) -> bool:  # a leaf only one node uses: drawn inside that node's chain box
        return absorb and out_count[u] == 1 and types[u] == ACCUMULATE and u not in special

    pred = array("q", [-1]) * n  # the one input a chain member takes from outside its box
    eligible = bytearray(n)
    modules: list[str | None] = [None] * n
    for v in kept:
        if out_count[v] != 1 or types[v] == ACCUMULATE or v in special:
            continue
        live = 0
        for k in range(starts[v], starts[v + 1]):
            u = flat[k]
            if keep[u] and not (absorb and out_count[u] == 1 and types[u] == ACCUMULATE and u not in special):
                live += 1  # absorbable(u), inlined: this loop runs once per input of every node
                pred[v] = u
        if live <= 1:
            eligible[v] = 1
            modules[v] = module_of(v)
    for v in kept:
        p = pred[v]
        if not eligible[v] or (p >= 0 and eligible[p] and modules[p] == modules[v]):
            continue  # not the first node of a chain
        chain = [v]
        w = consumer[v]
        while eligible[w] and pred[w] == chain[-1] and modules[w] == modules[v]:
            chain.append(w)
            w = consumer[w]
        if len(chain) < 2:
            continue
        item = Item("chain", chain, len(chain), modules[v])
        number = len(items)
        for w in chain:
            item_of[w] = number
            for k in range(starts[w], starts[w + 1]):
                u = flat[k]
                if keep[u] and absorbable(u):
                    item_of[u] = number
                    item.absorbed.append(u)
        item.count += len(item.absorbed)
        items.append(item)


def _item_edges(index: GraphIndex, keep: bytearray, kept: list[int], item_of: array) -> list[tuple[int, int]]:
    starts, flat = index.starts, index.flat
    edges: dict[tuple[int, int], None] = {}
    for v in kept:
        iv = item_of[v]
        for k in range(starts[v], starts[v + 1]):
            u = flat[k]
            if keep[u]:
                iu = item_of[u]
                if iu != iv:
                    edges[(iu, iv)] = None
    return list(edges)


def _fold(result: Plan, special: Sequence[int], max_items: int, types: list[str]) -> None:
    """Keep the boxes nearest the special nodes, fold the others into one box per connected part."""
    items = result.items
    m = len(items)
    neighbours: list[list[int]] = [[] for _ in range(m)]
    for a, b in result.edges:
        neighbours[a].append(b)
        neighbours[b].append(a)
    budget = max(1, (max_items * 3) // 4)  # room left for the summary boxes
    near = bytearray(m)  # 1: drawn as is
    frontier: list[int] = []
    for node in special:
        i = result.item_of[node]
        if i >= 0 and not near[i] and len(frontier) < budget:
            near[i] = 1
            frontier.append(i)
    kept_count = len(frontier)
    while frontier and kept_count < budget:  # breadth-first, one whole ring at a time
        ring = []
        for a in frontier:
            if len(neighbours[a]) > HUB_DEGREE:
                continue  # a weight used by every step of a loop would pull in every step
            for b in neighbours[a]:
                if not near[b]:
                    near[b] = 1
                    ring.append(b)
        if kept_count + len(ring) > budget:
            for b in ring:
                near[b] = 0
            break
        kept_count += len(ring)
        frontier = ring
    part = array("q", [-1]) * m
    parts: list[list[int]] = []
    for start in range(m):
        if near[start] or part[start] >= 0:
            continue
        part[start] = len(parts)
        members = [start]
        stack = [start]
        while stack:
            a = stack.pop()
            for b in neighbours[a]:
                if not near[b] and part[b] < 0:
                    part[b] = len(parts)
                    members.append(b)
                    stack.append(b)
        parts.append(members)
    if kept_count + len(parts) > max_items:
        for i in range(m):
            if part[i] >= 0:
                part[i] = 0
        parts = [[i for i in range(m) if part[i] >= 0]]
    renumber = array("q", [-1]) * m
    new_items: list[Item] = []
    for i in range(m):
        if near[i]:
            renumber[i] = len(new_items)
            new_items.append(items[i])
    folded = 0
    for members in parts:
        box = Item("folded", [], 0, ops=Counter())
        for i in members:
            renumber[i] = len(new_items)
            box.count += items[i].count
            for node in items[i].nodes:
                box.ops[types[node]] += 1
            if items[i].absorbed:
                box.ops[ACCUMULATE] += len(items[i].absorbed)
        folded += box.count
        new_items.append(box)
    edges: dict[tuple[int, int], None] = {}
    for a, b in result.edges:
        ra, rb = renumber[a], renumber[b]
        if ra != rb:
            edges[(ra, rb)] = None
    item_of = result.item_of
    for node in range(len(item_of)):
        if item_of[node] >= 0:
            item_of[node] = renumber[item_of[node]]
    result.items = new_items
    result.edges = list(edges)
    result.folded = folded


def _flood(size: int, starts: Any, edges: Any, sources: Iterable[int]) -> bytearray:
    """Mark every node reachable from ``sources`` in the adjacency arrays (``edges[starts[v]:starts[v+1]]``)."""
    seen = bytearray(size)
    stack = list(sources)
    for s in stack:
        seen[s] = 1
    while stack:
        v = stack.pop()
        for k in range(starts[v], starts[v + 1]):
            u = edges[k]
            if not seen[u]:
                seen[u] = 1
                stack.append(u)
    return seen
