"""`non_leaf_watched`: user code read ``.grad`` of a non-leaf tensor, which backward never fills.

The finding sits on the line that made the non-leaf (`w = w.to(device)`, `w = normalize(w)`), the
read is its symptom."""
from __future__ import annotations

from gradcheck_l2c.judge.sites import leaf_names, made_at
from gradcheck_l2c.records import Finding

KIND = "non_leaf_watched"


def scan(run) -> list[Finding]:

    found = []
    seen = set()
    for site, name, is_leaf, grad_fn in run.state.read_missing:
        if (site, name) in seen or not run.wants(name):
            continue
        seen.add((site, name))
        if not is_leaf and grad_fn is not None:
            made = made_at(grad_fn)
            made_by = f"made by {type(grad_fn).__name__}" + (f" at {made}" if made else "")
            leaves = leaf_names(run.state, grad_fn)
            went = f"; the gradient went to the leaf {', '.join(leaves)}" if leaves else ""
            found.append(run.finding(
                KIND, "error", name, made or site,
                f"{name} is not a leaf ({made_by}), so backward does not fill the .grad read at {site}{went}.",
                "keep the leaf under its own name and read its .grad (create it on the right device/dtype "
                "directly, e.g. torch.randn(..., device=device, requires_grad=True)), or call .retain_grad() "
                "on this one.",
                related={"symptom": site},
            ))
    return found
