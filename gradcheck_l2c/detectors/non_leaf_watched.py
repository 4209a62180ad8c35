"""`non_leaf_watched`: user code read ``.grad`` of a non-leaf, or of a tensor rebuilt from a cut."""
from __future__ import annotations

from gradcheck_l2c.records import Finding

KIND = "non_leaf_watched"


def scan(run) -> list[Finding]:
    from gradcheck_l2c.judge import leaf_names, node_site, ordered_events

    found = []
    seen = set()
    for site, name, taint, is_leaf, grad_fn in run.state.read_missing:
        if (site, name) in seen:
            continue
        seen.add((site, name))
        if not is_leaf and grad_fn is not None:
            made = node_site(grad_fn)
            made_by = f"made by {type(grad_fn).__name__}" + (f" at {made}" if made else "")
            leaves = leaf_names(run.state, grad_fn)
            went = f"; the gradient went to the leaf {', '.join(leaves)}" if leaves else ""
            found.append(run.finding(
                KIND, "error", name, site,
                f"{name} is not a leaf ({made_by}), so backward does not fill its .grad{went}.",
                "read .grad of the leaf tensor (create it on the right device/dtype directly, e.g. "
                "torch.randn(..., device=device, requires_grad=True)), or call .retain_grad() on this one.",
            ))
        elif taint is not None:
            for key, chain in taint.chains.items():
                for event in ordered_events([chain]):
                    found.append(run.cut_finding(event, name))
    return found
