"""Quality of the reference L2C against its baselines on the default synthetic clustered setting.

Runs local, uniform, oracle and L2C on the same data with `reference.l2c.L2CConfig` defaults and prints one
row each: final mean test accuracy, same-cluster share of neighbour weight, share of removed edges that
were cross-cluster, seconds per round and total seconds. Then checks the targets: L2C within 2 points of
oracle and at least 10 above uniform, at least 90% of removed edges cross-cluster, the L2C run under
2 minutes. Exit status 1 when a target is missed.

    python benchmarks/l2c_quality.py [--seed 0] [--threads N] [--device cpu]
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import torch

from reference.l2c import L2CConfig, load_data, run_l2c


def fmt(x: float | None, spec: str) -> str:
    """``x`` formatted by ``spec``, or a dash of the same width when there is no value."""
    width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
    return "-".rjust(width) if x is None or math.isnan(x) else format(x, spec)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)

    base = L2CConfig(seed=a.seed, device=a.device)
    data = load_data(base)
    print(
        f"synthetic: {base.nodes} nodes in {base.clusters} clusters, {base.rounds} rounds, S={base.local_epochs}, "
        f"T_0={base.t0}, K_0={base.k0}, device {base.resolved_device()}, {torch.get_num_threads()} threads"
    )
    header = f"{'algo':8} {'test acc':>8} {'same-cluster w':>14} {'removed cross':>13} {'s/round':>8} {'total s':>8}"
    print(header)
    print("-" * len(header))
    results = {}
    for algo in ("local", "uniform", "oracle", "l2c"):
        started = time.perf_counter()
        r = run_l2c(L2CConfig(**{**vars(base), "algo": algo}), data)
        total = time.perf_counter() - started
        results[algo] = (r, total)
        print(
            f"{algo:8} {r.mean_accuracy:8.1%} {fmt(r.same_cluster_share[-1], '14.2f')} "
            f"{fmt(r.removed_cross_cluster_share, '13.0%')} {r.seconds_per_round:8.3f} {total:8.1f}"
        )

    l2c, l2c_seconds = results["l2c"]
    oracle, uniform = results["oracle"][0].mean_accuracy, results["uniform"][0].mean_accuracy
    checks = [
        (f"L2C within 2 points of oracle ({l2c.mean_accuracy - oracle:+.1%})", l2c.mean_accuracy >= oracle - 0.02),
        (f"L2C >= 10 points above uniform ({l2c.mean_accuracy - uniform:+.1%})", l2c.mean_accuracy >= uniform + 0.10),
        (
            f">= 90% of removed edges cross-cluster ({fmt(l2c.removed_cross_cluster_share, '.0%')})",
            (l2c.removed_cross_cluster_share or 0) >= 0.9,
        ),
        (f"L2C run under 2 minutes ({l2c_seconds:.1f} s)", l2c_seconds < 120),
    ]
    for text, ok in checks:
        print(f"{'ok  ' if ok else 'MISS'} {text}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
