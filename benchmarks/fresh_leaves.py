"""A training loop that makes a fresh ``requires_grad=True`` leaf at every step (a per-sample input whose
gradient is wanted), run as a whole script by `trace_overhead.py`: each new leaf is one more watched tensor,
so the time per 1,000 steps shows whether the tracer's work grows with the tensors it ever watched.

    python benchmarks/fresh_leaves.py [steps]     # prints the seconds of each 1,000 steps, one line
"""
from __future__ import annotations

import sys
import time

import torch


def main(steps: int) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    weight = torch.randn(16, 16)
    times, start = [], time.perf_counter()
    for step in range(1, steps + 1):
        x = torch.randn(16, requires_grad=True)
        loss = torch.tanh(weight @ x).pow(2).sum()
        loss.backward()
        if step % 1000 == 0:
            now = time.perf_counter()
            times.append(now - start)
            start = now
    print(" ".join(f"{t:.4f}" for t in times))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30_000)
