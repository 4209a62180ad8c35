"""`non_leaf_watched`: user code read ``.grad`` of a non-leaf tensor, which backward never fills.

The finding sits on the line that made the non-leaf (`w = w.to(device)`, `w = normalize(w)`; for a result read as an
attribute, ``model.out.grad``, the line in the method that made it), the read is its symptom; the fix depends on
whether that line moved the leaf to a device or dtype, or kept a result on an object."""
from __future__ import annotations

from gradcheck_l2c.record.facts import Site
from gradcheck_l2c.record.query import made_at
from gradcheck_l2c.records import Finding

KIND = "non_leaf_watched"


def scan(run) -> list[Finding]:

    found = []
    seen = set()
    shown = _symptoms(run.record.nonleaf_reads)
    for site, name, is_leaf, grad_fn, made_here, refused, stored, _ in run.record.nonleaf_reads:
        site = shown[name] if not refused else site
        if (site, name) in seen or not run.wants(name):
            continue
        seen.add((site, name))
        if not is_leaf and grad_fn is not None:
            made = made_at(grad_fn)
            made_by = f"made by {type(grad_fn).__name__}" + (f" at {made}" if made else "")
            leaves = run.record.leaf_names(grad_fn)
            went = f"; the gradient went to the leaf {', '.join(leaves)}" if leaves else ""
            found.append(run.finding(  # where the reading function got it: the line to change
                KIND, "error", name, made_here or made or site,
                (f"{name} is not a leaf ({made_by}), so the optimizer at {site} refused it (\"can't optimize a "
                 f"non-leaf Tensor\"){went}." if refused else
                 f"{name} is not a leaf ({made_by}), so backward does not fill the .grad read at {site}{went}."),
                _kept(name) if stored else _fix(grad_fn, name), related={"symptom": site},
            ))
    return found


def _symptoms(reads) -> dict[str, Site | None]:
    """Each name's first read after a backward had ended, else its first read: where the missing gradient showed (a
    read before any backward, ``print(x.grad)`` to compare, shows nothing missing yet)."""
    shown: dict[str, Site | None] = {}
    after: set[str] = set()
    for read in reads:
        if read.name not in shown or (read.after_backward and read.name not in after):
            shown[read.name] = read.site
            if read.after_backward:
                after.add(read.name)
    return shown


def _kept(name: str) -> str:
    """A result a method keeps as an attribute (``self.out = self.fc(h)``), read as ``model.out.grad``."""
    attribute = name.rsplit(".", 1)[-1]
    return (f"call .retain_grad() on the {attribute} this line makes, right after it (before backward), to keep its "
            "gradient; or read the .grad of the leaf it was computed from.")


def _fix(grad_fn, name: str) -> str:
    """A copy to another device or dtype (``.to()``, ``.cuda()``, ``.double()``) is fixed by making the leaf
    there; any other computation by giving its result its own name."""
    if type(grad_fn).__name__ == "ToCopyBackward0":
        return ("create the leaf on the right device and dtype directly, e.g. torch.randn(..., device=device, "
                "dtype=dtype, requires_grad=True), or move it first and then call .requires_grad_() on the copy; "
                "or call .retain_grad() on this one.")
    short = name.rsplit(".", 1)[-1]
    if not short.isidentifier():
        return ("keep the leaf under its own name and give this result a new one, so that the .grad you read "
                "is the leaf's; or call .retain_grad() on this tensor before backward to keep its own gradient.")
    return (f"give this result a new name (e.g. {short}_out = ...) instead of rebinding `{short}`, so that "
            f"`{short}` still refers to the leaf whose .grad you read; or call .retain_grad() on this tensor "
            "before backward to keep its own gradient.")
