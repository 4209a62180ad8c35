"""How the reference L2C's rounds scale with nodes and processes on the CPU, and what its traffic would be at 1,000 nodes.

For N = 8, 32, 128 nodes of the synthetic data (CNNCifar, 62,006 parameters), runs ``python -m reference.l2c``
(P = 1) and ``torchrun --nproc_per_node 2 -m reference.l2c`` (P = 2, gloo) with both local-step paths (loop and
vmap), one thread per process. Every run prunes after its first round down to ``--keep`` neighbours per node,
so the first round shows the fully connected graph and the later ones the sparse graph a large run would
keep. Prints seconds per round for each (CPU time of rank 0, and wall time), the ratios (P=2 / P=1, vmap / loop,
and per node from the smallest to the largest N), the bytes of Δθ received per round before and after pruning, and
a projection of those bytes for 1,000 nodes.

    python benchmarks/l2c_scale.py [--nodes 8 32 128] [--rounds 3] [--keep 7]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARAMETERS = 62006  # CNNCifar with 10 classes
ROW_BYTES = PARAMETERS * 4  # one float32 change vector
PATHS = ("loop", "vmap")


def run(nodes: int, processes: int, path: str, rounds: int, keep: int, out: Path) -> dict:
    """One run's summary.json; ``keep`` neighbours per node survive the pruning after round 0."""
    args = ["-m", "reference.l2c", "--nodes", str(nodes), "--rounds", str(rounds), "--t0", "0",
            "--k0", str(max(0, nodes - 1 - keep)), "--local-step", path, "--threads", "1", "--device", "cpu",
            "--out", str(out)]  # fmt: skip
    launcher = [sys.executable]
    if processes > 1:
        launcher += ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(processes)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    subprocess.run([*launcher, *args], cwd=ROOT, env=env, check=True, capture_output=True, timeout=1800)
    return json.loads((out / "summary.json").read_text())


def size(count: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} B"


def steady(summary: dict, key: str = "round_cpu_seconds") -> float:
    """Mean seconds of the rounds after pruning: CPU time of rank 0 by default, or ``round_seconds`` (wall)."""
    later = summary[key][1:]
    return sum(later) / len(later)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[8, 32, 128])
    p.add_argument("--rounds", type=int, default=3, help="rounds per run, the first fully connected (default 3)")
    p.add_argument("--keep", type=int, default=7, help="neighbours each node keeps after pruning (default 7)")
    a = p.parse_args(argv)
    if a.rounds < 2:
        p.error("--rounds must be at least 2: the first round is fully connected, the later ones are measured")

    results: dict[tuple[int, int, str], dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in a.nodes:
            for path in PATHS:
                for processes in (1, 2):
                    out = Path(tmp) / f"{n}-{processes}-{path}"
                    results[n, processes, path] = run(n, processes, path, a.rounds, a.keep, out)

    print(f"CPU, one thread per process, synthetic data, CNNCifar ({PARAMETERS:,} parameters), {a.rounds} rounds, "
          f"pruned to {a.keep} neighbours after round 1. Seconds per round after pruning: CPU time of rank 0 (which "
          f"other jobs on a shared machine inflate less), wall time beside it; round 1 (fully connected) in brackets.")  # fmt: skip
    header = (f"{'N':>5} {'path':5} {'CPU P=1':>16} {'CPU P=2':>16} {'P=2/P=1':>7} {'wall P=1':>8} {'wall P=2':>8}"
              f" {'Δθ in: round 1':>14} {'after':>9} {'between P=2':>19}")  # fmt: skip
    print(header)
    print("-" * len(header))
    for n in a.nodes:
        for path in PATHS:
            one, two = results[n, 1, path], results[n, 2, path]
            traffic, between = one["bytes_per_round"]["one_node_per_machine"], two["bytes_per_round"]["between_processes"]
            print(
                f"{n:>5} {path:5} {steady(one):6.3f} ({one['round_cpu_seconds'][0]:6.3f}) "
                f"{steady(two):6.3f} ({two['round_cpu_seconds'][0]:6.3f}) {steady(two) / steady(one):7.2f} "
                f"{steady(one, 'round_seconds'):8.3f} {steady(two, 'round_seconds'):8.3f} "
                f"{size(traffic['first_round']):>14} {size(traffic['last_round']):>9} "
                f"{size(between['first_round']):>9} → {size(between['last_round']):>7}"
            )  # fmt: skip
    print()
    print("vmap / loop, CPU seconds per round after pruning:")
    for n in a.nodes:
        ratios = [steady(results[n, processes, "vmap"]) / steady(results[n, processes, "loop"]) for processes in (1, 2)]
        print(f"  N={n:<4} P=1 {ratios[0]:.2f}   P=2 {ratios[1]:.2f}")
    small, large = min(a.nodes), max(a.nodes)
    print(f"CPU seconds per round per node, N={large} / N={small} (1.00 = linear in N; after pruning):")
    for path in PATHS:
        for processes in (1, 2):
            per_node = [steady(results[n, processes, path]) / n for n in (small, large)]
            print(f"  {path:5} P={processes} {per_node[1] / per_node[0]:.2f}")

    n = 1000
    dense, sparse = n * (n - 1) * ROW_BYTES, n * a.keep * ROW_BYTES
    print(f"\nProjection for {n:,} nodes, Δθ received per round (each node a machine): fully connected "
          f"{size(dense)}, after pruning to {a.keep} neighbours {size(sparse)}; between P processes a fully "
          f"connected round moves (P-1)·N·{size(ROW_BYTES)} = {size((2 - 1) * n * ROW_BYTES)} at P=2, "
          f"{size((8 - 1) * n * ROW_BYTES)} at P=8, and never more than the per-node figure.")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
