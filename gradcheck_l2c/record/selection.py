"""Which watched tensors the user's ``watch`` selects: name patterns matched against each tensor's aliases, and
tensors or modules given directly."""
from __future__ import annotations

import fnmatch

from gradcheck_l2c.record.watch import Watched, WatchRegistry, WatchSpec


def matches(watched: Watched, pattern: str) -> bool:
    """A pattern matches a tensor's full name, its name inside its module, or its variable name, each read
    from any dot on: ``weight`` means every ``*.weight``, and a module's name (``fc2``) its whole subtree."""
    return any(_matches_name(alias, pattern) for alias in watched.aliases)


def _matches_name(name: str, pattern: str) -> bool:
    parts = name.split(".")
    for start in range(len(parts)):
        tail = ".".join(parts[start:])
        if fnmatch.fnmatchcase(tail, pattern) or fnmatch.fnmatchcase(tail, pattern + ".*"):
            return True
    return False


def selected(registry: WatchRegistry, spec: WatchSpec) -> tuple[set[int], list[str]]:
    """Keys of the tensors the user asked about, and the patterns that matched nothing."""
    if not spec.narrowed:
        return {w.key for w in registry.all}, []
    keys: set[int] = set()
    unmatched: list[str] = []
    for pattern in spec.patterns:
        hits = {w.key for w in registry.all if matches(w, pattern)}
        if not hits:
            unmatched.append(pattern)
        keys |= hits
    for tensor in spec.tensors:
        key = registry.key_of(tensor)
        if key is not None:
            keys.add(key)
    for module in spec.modules:
        for param in module.parameters():
            key = registry.key_of(param)
            if key is not None:
                keys.add(key)
    return keys, unmatched
