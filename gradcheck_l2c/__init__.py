"""gradcheck-l2c: say why a PyTorch tensor got no gradient, and the file and line that cut it.

Importing the package imports nothing heavy: torch and the tracer load on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "trace": "gradcheck_l2c.tracer",
    "Trace": "gradcheck_l2c.tracer",
    "Finding": "gradcheck_l2c.records",
    "WatchedTensor": "gradcheck_l2c.records",
    "GradcheckError": "gradcheck_l2c.errors",
    "UsageError": "gradcheck_l2c.errors",
    "NestedTraceError": "gradcheck_l2c.errors",
    "ConcurrentTraceError": "gradcheck_l2c.errors",
    "active_trace": "gradcheck_l2c.tracer",
    "render": "gradcheck_l2c.present.draw.render",
    "write_render_dir": "gradcheck_l2c.present.draw.render",
    "save_graph": "gradcheck_l2c.present.draw.render",
    "write_html_report": "gradcheck_l2c.present.html.report",
    "assert_grad_reaches": "gradcheck_l2c.assertions",
    "assert_grad_flows": "gradcheck_l2c.assertions",
    "assert_trace_clean": "gradcheck_l2c.assertions",
}

__all__ = ["__version__", "load_ipython_extension", *_EXPORTS]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext gradcheck_l2c``: register the ``%%gradcheck`` cell magic."""
    from gradcheck_l2c.magic import load_ipython_extension as load

    load(ipython)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'gradcheck_l2c' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
