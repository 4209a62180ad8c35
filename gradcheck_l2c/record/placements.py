"""Where user code set the modules that hold a watched parameter, followed up from the parameter when the trace
ends: the chain of those attributes, and for a parameter made after an optimizer, the line that joined its module
into the model."""
from __future__ import annotations

import functools
from typing import Any

from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.watch import Watched, WatchRegistry


def placements(registry: WatchRegistry, watched: Watched) -> list[tuple[int, Site]]:
    """The module holding the tensor and its ancestors that user code set as attributes during the trace
    (id, the line that set it), the holder first, up to the first one not set so."""
    chain: list[tuple[int, Site]] = []
    ident = watched.owner.holder if watched.owner is not None else None
    while ident in registry.placed and len(chain) < 64:
        site, parent, _ = registry.placed[ident]
        if site is None:
            break
        chain.append((ident, site))
        ident = parent
    return chain


def joined(registry: WatchRegistry, watched: Watched) -> Site | None:
    """For a parameter made after an optimizer: the last line of the function that asked for it (its
    ``built_at``) that set its module, or a module above it, into another (``model.set_head(head)``)."""
    made, ident, found = watched.built_at, watched.owner.holder if watched.owner is not None else None, None
    for _ in range(64):
        if made is None or ident not in registry.placed:
            break
        _, ident, stack = registry.placed[ident]
        for _, code, site in stack:
            if site.file == made.file and site.line > made.line and made.line in _own_lines(code):
                found = site if found is None or site.line > found.line else found
    return found


@functools.lru_cache(maxsize=64)
def _own_lines(code: Any) -> frozenset[int]:
    """The lines whose statements a code object runs itself (not those of the functions it defines)."""
    return frozenset(line for _, _, line in code.co_lines() if line is not None)
