"""A backward refused because a gradient hook returned values of another size, type or count than those it replaces:
PyTorch names the hook (``hook 'scale_grads' has changed the size of value``) but not where it is. It is looked up by
that name among the hooks on the watched tensors and on the modules that hold them, and named at its (first)
``return`` of a value."""
from __future__ import annotations

import inspect
import os
import re
from typing import Any, Iterator

from gradcheck_l2c.record.locations import USER, Site, frame_kind
from gradcheck_l2c.record.param_sources import first_return
from gradcheck_l2c.record.torch_internals import global_backward_hook_tables, hook_tables, tensor_hook_tables
from gradcheck_l2c.record.watch import WatchRegistry

_NAMED = re.compile(r"hook '([^']+)' has (changed the (size|type) of value|returned an incorrect number of values)")


def hook_result_site(registry: WatchRegistry, text: str) -> tuple[Site | None, dict[str, Any]]:
    """Where the hook PyTorch's message names returns a value (else its definition), and what it changed (``size``,
    ``type`` or ``count``); no site when no user function of that name hooks a watched tensor or a module holding
    one."""
    match = _NAMED.search(text)
    if match is None:
        return None, {}
    name, changed = match[1], match[3] or "count"
    for hook in _hooks(registry):
        function = inspect.unwrap(getattr(hook, "hook", hook))  # a module's hook on a node is wrapped with its module
        code = getattr(function, "__code__", None)
        if code is not None and code.co_name == name and frame_kind(code.co_filename) == USER:
            site = first_return(function) or Site(os.path.abspath(code.co_filename), code.co_firstlineno)
            return site, {"hook": name, "changed": changed}
    return None, {"hook": name, "changed": changed}


def _hooks(registry: WatchRegistry) -> Iterator[Any]:
    """The hooks on the live watched tensors and on the modules that hold them (each module once), and the global
    module hooks."""
    seen: set[int] = set()
    for watched in list(registry.all):
        tensor = watched.ref()
        if tensor is not None:
            for table in tensor_hook_tables(tensor):
                yield from table.values()
        module = watched.owner.module() if watched.owner is not None else None
        if module is None or id(module) in seen:
            continue
        for each in module.modules():
            if id(each) not in seen:
                seen.add(id(each))
                for table in hook_tables(each):
                    yield from table.values()
    for table in global_backward_hook_tables():
        yield from table.values()
