"""Lines of a patched file back to the lines of the original, so that what a rerun of the patched copy
reports can be compared with the original findings."""
from __future__ import annotations

import difflib
from collections.abc import Callable


def line_map(old: str, new: str) -> Callable[[int], int]:
    """A function from a 1-based line of ``new`` to the line of ``old`` it came from (a changed line maps to
    the line it replaced; an inserted one to the line it follows)."""
    old_lines, new_lines = old.splitlines(), new.splitlines()
    mapping: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for offset, line in enumerate(range(j1, j2)):
            source = i1 + offset if tag == "equal" else min(i1 + offset, max(i2 - 1, i1))
            mapping[line + 1] = min(source, max(len(old_lines) - 1, 0)) + 1
    return lambda line: mapping.get(line, line)
