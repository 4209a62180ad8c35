"""Where a value autograd refused came from when the call that raised is not the line to change: the parameters the
script froze (a loss left without graph, a custom backward asking ``autograd.grad`` for them), and the line of another
function that made a non-leaf whose ``requires_grad`` flag was then refused (a library's parameter store)."""
from __future__ import annotations

import os
from typing import Any

from torch import Tensor

from gradcheck_l2c.record.locations import Site
from gradcheck_l2c.record.names import resolve_names
from gradcheck_l2c.record.origins import Origins
from gradcheck_l2c.record.watch import Watched, WatchRegistry


def last_frozen(registry: WatchRegistry, every: bool) -> tuple[Watched | None, int]:
    """The last parameter made among those user code switched off (the head, the part a freezing loop means to
    keep trainable: its ``frozen_at`` is the line), and how many are off: if ``every`` live parameter is (a loss
    without graph), or any (a custom backward asked autograd.grad for one); None if not so."""
    params = [w for w in registry.all if w.is_parameter and w.tensor is not None]
    frozen = [w for w in params if w.frozen and w.frozen_at is not None]
    if not frozen or (every and not all(w.frozen for w in params)):
        return None, 0
    resolve_names(registry)
    return max(frozen, key=lambda w: w.key), len(params) if every else len(frozen)


def made_elsewhere(origins: Origins, tensor: Tensor | None, frame: Any) -> Site | None:
    """The line that made ``tensor`` (a result, not a leaf) in another function than ``frame``'s, which set its
    flag (a library's parameter store handed a cast of the user's leaf): the line to change; None if the same."""
    node = tensor.grad_fn if tensor is not None and frame is not None else None
    made = (origins.site_of(node) or node.metadata.get("gradcheck_site")) if node is not None else None
    if made is None:
        return None
    site = made if isinstance(made, Site) else Site(made[0], made[1])  # a conversion's line (`remember_site`)
    code = frame.f_code
    inside = site.file == os.path.abspath(code.co_filename) and site.line in {line for *_, line in code.co_lines()}
    return None if inside else site
