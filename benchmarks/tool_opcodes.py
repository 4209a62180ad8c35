"""Bytecode instructions the tool's own Python code runs per step of `trace_overhead.py`'s in-process workloads,
with the functions that run most of them.

A count, not a time: the same on every run of one version, so two versions compare exactly where this machine's
timing noise (a few percent between runs) hides a 1-2% change. It tells where the tool's Python runs, not what a
change saves: what it does not count is torch's own dispatch to the mode, C calls (each read of a tensor's ``.grad``
is a 50-100 ns getter that touches the tensor's memory) and the caches the tool's work evicts. Twice, halving the
MLP's count (the polled parameters' reads as C loops) left its time where it was (docs/benchmarks.md): time a change
side by side before keeping it. Counting makes the run ~50x slower, so it looks at a few steps only.

    python benchmarks/tool_opcodes.py [--steps 50] [--top 15] [--workload mlp|mlp-none|mlp-before|l2c|transformer]
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trace_overhead  # noqa: E402  (the workloads, beside this script)

from gradcheck_l2c import trace  # noqa: E402

TOOL = str(Path(trace_overhead.ROOT, "gradcheck_l2c")) + "/"

WORKLOADS: dict[str, Callable[[], Callable[[], None]]] = {
    "mlp": trace_overhead.mlp_workload,
    "mlp-none": lambda: trace_overhead.mlp_workload("none"),
    "mlp-before": lambda: trace_overhead.mlp_workload("before"),
    "l2c": trace_overhead.l2c_workload,
    "transformer": trace_overhead.realworld_workload,
}


def count(step: Callable[[], None], warmup: int, steps: int) -> Counter:
    """Instructions per tool function over ``steps`` traced steps, after ``warmup`` steps in the same trace."""
    counts: Counter = Counter()

    def on_call(frame: Any, event: str, arg: Any) -> Any:
        if not frame.f_code.co_filename.startswith(TOOL):
            return None
        frame.f_trace_opcodes = True
        key = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"

        def on_event(frame: Any, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[key] += 1
            return on_event

        return on_event

    with trace():
        for _ in range(warmup):
            step()
        sys.settrace(on_call)
        try:
            for _ in range(steps):
                step()
        finally:
            sys.settrace(None)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50,
                        help="steps counted, a 50th backward among them (L2C: whole runs, a tenth of them)")
    parser.add_argument("--top", type=int, default=15, help="functions listed per workload")
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append",
                        help="the workloads to count (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    for name in args.workload or list(WORKLOADS):
        runs = max(1, args.steps // 10) if name == "l2c" else args.steps
        counts = count(WORKLOADS[name](), warmup=2 if name == "l2c" else 60, steps=runs)
        unit = "run" if name == "l2c" else "step"
        print(f"{name}: {sum(counts.values()) / runs:,.0f} tool instructions per {unit}")
        for function, total in counts.most_common(args.top):
            print(f"  {total / runs:10,.0f}  {function}")


if __name__ == "__main__":
    main()
