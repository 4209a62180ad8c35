"""How findings list the tensors they are about: a few names, then how many more."""
from __future__ import annotations

from collections.abc import Iterable


def listed(names: Iterable[str], most: int = 3) -> str:
    """The first ``most`` names joined, then how many more (``a, b, c and 5 more``)."""
    names = list(names)
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
