"""Values user code keeps on modules across iterations (a hidden state, a spike train): which attribute of which
module each one is, and the attributes the script detaches in place between iterations (a ``detach_hidden()`` that
detaches the membrane state), so that the one it forgot to detach can be named there."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gradcheck_l2c.record.locations import Site

#: The key, in an autograd node's metadata, of the module (its id) and the attribute its tensor was last set as.
KEPT_AS = "gradcheck_kept_as"


def kept_as(tensor: Any, module: Any, name: str) -> None:
    """User code set ``tensor`` (with history) as the attribute ``name`` of ``module``."""
    tensor.grad_fn.metadata[KEPT_AS] = (id(module), name)


def detached_in_place(node: Any, site: Site | None, detached: dict[int, dict[str, Site]]) -> None:
    """``x.detach_()`` at ``site`` of a tensor whose node was ``node``: a value kept on a module is noted in
    ``detached`` by the module's id and the attribute."""
    kept = node.metadata.get(KEPT_AS) if node is not None else None
    if kept is not None and site is not None:
        detached.setdefault(kept[0], {})[kept[1]] = site


def detached_beside(node: Any, detached: dict[int, dict[str, Site]]) -> tuple[str, str, Site] | None:
    """For the node of a value kept on a module that the script never detached in place: another attribute of that
    module it detaches in place between iterations: (this attribute, that one, the line); else None."""
    kept = node.metadata.get(KEPT_AS)
    others = detached.get(kept[0]) if kept is not None else None
    if not others or kept[1] in others:
        return None
    other, site = next(iter(others.items()))
    return kept[1], other, site


def reset_in_place(node: Any, writes: Sequence[Any]) -> Any:
    """For the node of a value kept on a module: the latest in-place write made on top of it (``state.zero_()``
    between iterations), which clears its values and keeps its graph; else None."""
    return next((write for write in reversed(writes) if write.before == id(node) and write.site is not None), None)
