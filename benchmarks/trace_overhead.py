"""Traced / untraced time, side by side with ``--nan`` (trace(nan=True)), ``--grad-stats`` and anomaly mode, on
three training workloads.

Workloads: reference L2C rounds (CNN, conv-bound), an op-bound MLP (20 x [Linear, LayerNorm,
GELU], width 64, batch 8), and one step of a realworld corpus program (a TransformerEncoder
classifier). Each configuration runs interleaved in rounds and the median per-step time is used,
so machine noise hits all of them alike. The last columns are ``--nan`` and ``--grad-stats`` (gradient norms after
each backward, the update of each optimizer step) over plain tracing.

    python benchmarks/trace_overhead.py [--rounds 5] [--steps 200]
"""
from __future__ import annotations

import argparse
import statistics
import time
from contextlib import nullcontext
from typing import Callable

import torch
from torch import nn

from gradcheck_l2c import trace


def mlp_workload() -> Callable[[], None]:
    """One optimizer step of the op-bound MLP, logging the loss with .item() as scripts do."""
    torch.manual_seed(0)
    layers = [layer for _ in range(20) for layer in (nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU())]
    model = nn.Sequential(*layers, nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 64), torch.randint(0, 10, (8,))
    losses: list[float] = []

    def step() -> None:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    return step


def realworld_workload() -> Callable[[], None]:
    """One training step of a realworld corpus program (tests/realworld/programs/transformer_encoder.py:
    nn.TransformerEncoder with cloned layers, padding mask, AdamW, clipping, LambdaLR)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parent.parent / "tests" / "realworld" / "programs" / "transformer_encoder.py"
    spec = importlib.util.spec_from_file_location("realworld_transformer_encoder", path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)  # type: ignore[union-attr]
    torch.manual_seed(0)
    model = program.Classifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    src = torch.randint(1, 50, (10, 8))
    src[7:, :3] = 0
    padding_mask = (src == 0).t()
    y = torch.randint(0, 3, (8,))
    losses: list[float] = []

    def step() -> None:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(src, padding_mask), y, label_smoothing=0.1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        losses.append(loss.item())

    return step


def l2c_workload() -> Callable[[], None]:
    """Reference L2C training (2 rounds, 6 nodes) on synthetic data generated once."""
    from reference.l2c import L2CConfig, load_data, run_l2c

    config = L2CConfig(nodes=6, rounds=2, local_epochs=1, device="cpu")
    data = load_data(config)
    return lambda: run_l2c(config, data)


def measure(step: Callable[[], None], context: Callable[[], object], steps: int) -> float:
    with context():
        for _ in range(max(1, steps // 10)):
            step()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        return (time.perf_counter() - start) / steps


def nan_checked():
    return trace(nan=True)


def grad_stats():
    return trace(grad_stats=True)


def anomaly():
    return torch.autograd.set_detect_anomaly(True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200, help="MLP steps per measurement")
    parser.add_argument("--l2c-steps", type=int, default=2, help="L2C runs per measurement")
    args = parser.parse_args()
    torch.set_num_threads(1)
    workloads = [("MLP 20x[Linear,LayerNorm,GELU]", mlp_workload(), args.steps),
                 ("reference L2C (CNN)", l2c_workload(), args.l2c_steps),
                 ("realworld transformer_encoder", realworld_workload(), args.steps // 4)]
    contexts = {"untraced": nullcontext, "traced": trace, "nan": nan_checked, "stats": grad_stats, "anomaly": anomaly}
    print(f"{'workload':34} {'untraced':>10} {'traced':>8} {'--nan':>8} {'stats':>8} {'anomaly':>8} "
          f"{'nan/traced':>11} {'stats/traced':>13}")
    for name, step, steps in workloads:
        times: dict[str, list[float]] = {label: [] for label in contexts}
        for _ in range(args.rounds):
            for label, context in contexts.items():
                times[label].append(measure(step, context, steps))
        base = statistics.median(times["untraced"])
        ratios = [statistics.median(times[label]) / base for label in ("traced", "nan", "stats", "anomaly")]
        print(f"{name:34} {base * 1e3:8.2f}ms " + " ".join(f"{ratio:7.2f}x" for ratio in ratios)
              + f" {ratios[1] / ratios[0]:10.2f}x {ratios[2] / ratios[0]:12.2f}x")


if __name__ == "__main__":
    main()
