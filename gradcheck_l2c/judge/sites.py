"""Where things happened, as the detectors word it: the user line that made an autograd node, and the
watched leaves a node's graph reaches."""
from __future__ import annotations

import os
from typing import Any

from gradcheck_l2c.record import graph
from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.state import TraceState


def node_site(node: Any) -> str | None:
    """The user line that created an autograd node, when the tracer recorded it."""
    site = node.metadata.get("gradcheck_site") if node is not None else None
    return f"{os.path.basename(site[0])}:{site[1]}" if site else None


def made_at(node: Any, limit: int = 64) -> Site | None:
    """The user line that made ``node``, or else the nearest node behind it whose line is known."""
    for seen, child in enumerate(graph.iter_nodes([node], graph.SAFE_WALK)):
        site = child.metadata.get("gradcheck_site")
        if site:
            return Site(*site)
        if seen >= limit:
            break
    return None


def leaf_names(state: TraceState, node: Any) -> list[str]:
    """Names of the watched leaves a node's graph reaches (for "the gradient went to ...")."""
    names = []
    for tensor in graph.leaf_tensors([node]):
        watched = state.registry.get(tensor)
        if watched is not None:
            names.append(watched.name)
    return names
