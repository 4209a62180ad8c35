"""Where a traced run's extra time goes, side by side in one process: the tool's Python in the interceptor and its
handlers, against torch's dispatch of every op to a torch-function mode and the tool's patches and hooks.

Each workload of `trace_overhead.py` runs four ways, interleaved round by round in a new shuffled order each round
(median time per step):

- untraced;
- traced;
- traced with the interceptor a bare pass-through: torch still hands every op to the mode, which records nothing;
- traced with the interceptor off the mode stack once the trace started: the patches and hooks run, and every layer
  is called through ``nn.Module.__call__`` (with the mode on, the module bypass calls the layers under a learnt one
  straight to their ``forward``, faster than untraced: on op-bound nets this row can read above the one before).

``tool Python`` is traced less pass-through, ``the rest`` pass-through less untraced, in points of the untraced
time: no work on the interceptor's Python wins more than the first, and installing the mode only while a cut value
lives (the design issue 27 proposes) aims at the mode-off row. The two stripped rows are measurements only: what
they record is not a trace's result.

    python benchmarks/overhead_parts.py [--rounds 9] [--workload l2c|mlp|transformer ...]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trace_overhead  # noqa: E402  (the workloads, beside this script)

from gradcheck_l2c import trace  # noqa: E402
from gradcheck_l2c.record.interceptor import Interceptor  # noqa: E402
from gradcheck_l2c.record.torch_internals import pop_mode, push_mode  # noqa: E402

#: name -> (how to build the step, steps per measurement)
WORKLOADS: dict[str, tuple[Callable[[], Callable[[], None]], int]] = {
    "l2c": (trace_overhead.l2c_workload, 2),
    "mlp": (trace_overhead.mlp_workload, 200),
    "transformer": (trace_overhead.realworld_workload, 50),
}


def _pass_through(self: Any, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
    return func(*args, **(kwargs or {}))


@contextmanager
def interceptor_passing_through() -> Iterator[None]:
    """A trace whose interceptor only calls each op: torch's dispatch to the mode without the tool's Python."""
    original = Interceptor.__dict__["__torch_function__"]
    Interceptor.__torch_function__ = _pass_through  # type: ignore[method-assign]
    try:
        with trace():
            yield
    finally:
        Interceptor.__torch_function__ = original  # type: ignore[method-assign]


@contextmanager
def mode_off() -> Iterator[None]:
    """A trace with its interceptor taken off the mode stack: its patches and hooks, no mode."""
    with trace():
        mode = pop_mode()
        if not isinstance(mode, Interceptor):
            push_mode(mode)
            raise RuntimeError(f"the innermost torch-function mode is {type(mode).__name__}, not the trace's")
        try:
            yield
        finally:
            push_mode(mode)


CONTEXTS: dict[str, Callable[[], Any]] = {
    "untraced": nullcontext,
    "traced": trace,
    "pass-through": interceptor_passing_through,
    "mode off": mode_off,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--workload", nargs="+", choices=sorted(WORKLOADS), default=["l2c", "mlp", "transformer"])
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    torch.set_num_threads(1)
    print(f"{'workload':12} {'untraced':>14} {'traced':>7} {'pass-through':>13} {'mode off':>9}   "
          f"{'tool Python':>11} {'the rest':>9}  (points of untraced)")
    for name in args.workload:
        build, steps = WORKLOADS[name]
        step = build()
        times: dict[str, list[float]] = {label: [] for label in CONTEXTS}
        for order in trace_overhead.shuffled_rounds(list(CONTEXTS), args.rounds):
            for label in order:
                times[label].append(trace_overhead.measure(step, CONTEXTS[label], steps))
        base = statistics.median(times["untraced"])
        traced, passing, off = (statistics.median(times[label]) / base
                                for label in ("traced", "pass-through", "mode off"))
        unit = "ms/run" if name == "l2c" else "ms/step"
        print(f"{name:12} {base * 1e3:7.2f} {unit:>6} {traced:6.2f}x {passing:12.2f}x {off:8.2f}x   "
              f"{(traced - passing) * 100:11.1f} {(passing - 1) * 100:9.1f}")


if __name__ == "__main__":
    main()
