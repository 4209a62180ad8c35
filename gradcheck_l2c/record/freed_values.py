"""Where a value whose graph an earlier backward freed is to be cut, when a later backward refuses it: the weights
that made it, and whether a step since that backward updated them or another optimizer holds them, tell whether the
earlier loss or this one was meant to reach them."""
from __future__ import annotations

from typing import Any

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.origins import Origins
from gradcheck_l2c.record.watch import WatchRegistry


def taken_in(registry: WatchRegistry, origins: Origins, stepped: list[set[int]], node: Any,
             above: Any) -> tuple[Site | None, bool]:
    """Where a freed value (not a root) was taken in, when that is the line to change, and whether by the earlier loss.
    When a step since then updated its weights (the earlier backward trained them as meant), it is cut (or made anew)
    where this backward's graph takes it in: the nearest node above (a discriminator's loss on the generator's
    output). When that step left them alone and another optimizer holds them, the earlier loss was not to reach them:
    where it took the value in (a peer's output as a target). Else the line that made the value."""
    if stepped_below(registry, stepped, node):
        return origins.site_in_running(above), False
    if stepped and optimized_below(registry, node):
        return origins.site_in_running(origins.taken_at(node)), True
    return None, False


def optimized_below(registry: WatchRegistry, node: Any) -> bool:
    """Whether an optimizer holds a watched leaf of the graph below ``node``."""
    return any(w is not None and w.optimized for w in map(registry.get, graph.leaf_tensors([node])))


def stepped_below(registry: WatchRegistry, stepped: list[set[int]], node: Any) -> bool:
    """Whether a step since the last backward (``stepped``: the keys each optimizer that stepped holds) updated a
    watched leaf of the graph below ``node``."""
    if not stepped:
        return False
    keys = set().union(*stepped)
    return any(registry.key_of(leaf) in keys for leaf in graph.leaf_tensors([node]))
