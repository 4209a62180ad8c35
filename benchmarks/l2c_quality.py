"""Quality of the reference L2C against its baselines: synthetic clusters, scikit-learn's digits, and CIFAR-10 when given.

Runs local, uniform, oracle and L2C on the same data and prints one row each: final mean test accuracy,
same-cluster share of neighbour weight, share of removed edges that were cross-cluster, seconds per round and
total seconds. Settings:

* ``synthetic``: the `reference.l2c.L2CConfig` defaults (12 nodes in 2 label-conflicting clusters);
* ``digits, permuted``: 12 nodes in 2 clusters that label the digits differently;
* ``digits, 2 classes/node``: the paper's split, 12 nodes holding two digits each;
* ``cifar10`` with ``--cifar-root DIR``: the paper's protocol, 100 nodes with two classes each, printed beside the
  published numbers (meta-L2C 92.1%, D-PSGD 83.0%, local 87.5%).

Then checks the targets on the synthetic data: L2C within 2 points of oracle and at least 10 above uniform, at
least 90% of removed edges cross-cluster, the L2C run under 2 minutes; and on the permuted digits L2C within 2
points of oracle and at least 10 above uniform. Exit status 1 when a target is missed.

    python benchmarks/l2c_quality.py [--seed 0] [--threads N] [--device cpu] [--cifar-root DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time

import torch

from gradcheck_l2c_reference.l2c import L2CConfig, L2CResult, load_data, run_l2c

PUBLISHED_CIFAR = {"l2c": 0.921, "uniform": 0.830, "local": 0.875}  # Li et al. 2022: meta-L2C, D-PSGD, local


def fmt(x: float | None, spec: str) -> str:
    """``x`` formatted by ``spec``, or a dash of the same width when there is no value."""
    width = int("".join(ch for ch in spec.split(".")[0] if ch.isdigit()) or 0)
    return "-".rjust(width) if x is None or math.isnan(x) else format(x, spec)


def table(title: str, base: L2CConfig, published: dict[str, float] | None = None) -> dict[str, tuple[L2CResult, float]]:
    """Run the four algorithms on one dataset and print their rows; returns each result with its total seconds."""
    data = load_data(base)
    algos = ("local", "uniform", "oracle", "l2c") if data.clusters is not None else ("local", "uniform", "l2c")
    print(
        f"\n{title}: {base.nodes} nodes, {base.rounds} rounds, S={base.local_epochs}, lr={base.lr}, "
        f"T_0={base.t0}, K_0={base.k0}, device {base.resolved_device()}, {torch.get_num_threads()} threads"
    )
    header = f"{'algo':8} {'test acc':>8} {'same-cluster w':>14} {'removed cross':>13} {'s/round':>8} {'total s':>8}"
    if published:
        header += f" {'published':>9}"
    print(header)
    print("-" * len(header))
    results = {}
    for algo in algos:
        started = time.perf_counter()
        r = run_l2c(dataclasses.replace(base, algo=algo), data)
        total = time.perf_counter() - started
        results[algo] = (r, total)
        row = (
            f"{algo:8} {r.mean_accuracy:8.1%} {fmt(r.same_cluster_share[-1], '14.2f')} "
            f"{fmt(r.removed_cross_cluster_share, '13.0%')} {r.seconds_per_round:8.3f} {total:8.1f}"
        )
        if published:
            row += f" {fmt(published.get(algo), '9.1%')}"
        print(row)
    return results


def close_to_oracle(results: dict[str, tuple[L2CResult, float]], name: str) -> list[tuple[str, bool]]:
    """L2C within 2 points of oracle and 10 above uniform."""
    l2c = results["l2c"][0].mean_accuracy
    oracle, uniform = results["oracle"][0].mean_accuracy, results["uniform"][0].mean_accuracy
    return [
        (f"{name}: L2C within 2 points of oracle ({l2c - oracle:+.1%})", l2c >= oracle - 0.02),
        (f"{name}: L2C >= 10 points above uniform ({l2c - uniform:+.1%})", l2c >= uniform + 0.10),
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    p.add_argument("--cifar-root", default=None, help="folder holding cifar-10-batches-py: adds the paper's protocol")
    p.add_argument("--cifar-rounds", type=int, default=100, help="rounds of the CIFAR-10 runs (default %(default)s)")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)

    synthetic = table("synthetic, 2 clusters", L2CConfig(seed=a.seed, device=a.device))
    digits = dict(dataset="digits", nodes=12, rounds=30, lr=0.1, beta=0.3, t0=5, k0=6, seed=a.seed, device=a.device)
    permuted = table("digits, permuted labels in 2 clusters", L2CConfig(partition="permuted", **digits))
    table("digits, 2 classes per node (the paper's split)", L2CConfig(partition="pathological", **digits))
    if a.cifar_root:
        cifar = L2CConfig(dataset="cifar10", data_root=a.cifar_root, nodes=100, rounds=a.cifar_rounds,
                          partition="pathological", t0=10, k0=70, seed=a.seed, device=a.device)  # fmt: skip
        table("cifar10, 2 classes per node (the paper's protocol)", cifar, PUBLISHED_CIFAR)

    l2c, l2c_seconds = synthetic["l2c"]
    checks = close_to_oracle(synthetic, "synthetic") + [
        (
            f"synthetic: >= 90% of removed edges cross-cluster ({fmt(l2c.removed_cross_cluster_share, '.0%')})",
            (l2c.removed_cross_cluster_share or 0) >= 0.9,
        ),
        (f"synthetic: L2C run under 2 minutes ({l2c_seconds:.1f} s)", l2c_seconds < 120),
    ]
    checks += close_to_oracle(permuted, "digits permuted")
    print()
    for text, ok in checks:
        print(f"{'ok  ' if ok else 'MISS'} {text}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
