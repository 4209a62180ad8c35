"""Traced / untraced time, side by side with ``--nan`` (trace(nan=True)), ``--grad-stats`` and anomaly mode, on
training workloads in this process; then whole programs, untraced and traced, with their peak memory.

Workloads in this process: reference L2C rounds (CNN, conv-bound), an op-bound MLP (20 x [Linear, LayerNorm,
GELU], width 64, batch 8) logging ``loss.item()`` after each backward, the same MLP with no cut at all and
logging before each backward, and one step of a realworld corpus program (a TransformerEncoder
classifier). Each configuration runs interleaved in rounds, in a new shuffled order each round (a fixed order
would give each configuration the same neighbour, whose garbage and warm caches it would inherit every round), and
each configuration's fastest round is used, as ``timeit`` advises: what else runs on a shared machine only ever adds
time, in bursts that can cover most of one configuration's rounds and few of another's (a median then moved a ratio
by a fifth from one run to the next). Each round times whole steps, so a cost the tool pays every so many steps is in
each of them; an L2C measurement times four runs after one unmeasured run in its trace (one run of ~0.3 s read
278-433 ms untraced within one process here: with two runs a measurement, the L2C ratio read 1.08x-1.18x between
full runs of one version). The last columns are ``--nan`` and ``--grad-stats`` (gradient norms after each backward,
the update of each optimizer step) over plain tracing.

Whole programs (each in a new process, ``python prog.py`` beside ``python -m gradcheck_l2c trace prog.py``,
interleaved, the fastest run's wall time, the median peak RSS from ``wait4``): `fresh_leaves.py` (a fresh
``requires_grad=True`` leaf at every step, with the seconds per 1,000 steps at its start and end, each block the
fastest of the runs; its own
``--fresh-rounds``: the traced process, which allocates more, varies by up to a tenth from run to run where the
untraced one holds within 2%, so it runs five times) and every ``tests/realworld`` program (their median ratio;
three runs each by default: one run of a ~3 s program varies by a tenth either way, which one round passes on to half
the ratios, and the median of single rounds read 1.06x in runs whose programs read 1.02x-1.03x over eight rounds).
The tool's modules are byte-compiled first, as ``pip install`` compiles an installed package: an environment that sets
``PYTHONDONTWRITEBYTECODE`` (this one does) would otherwise have every traced process compile them from source, about
90 ms a run that no user's installed copy pays, while torch's own modules load compiled.

    python benchmarks/trace_overhead.py [--rounds 5] [--steps 200] [--l2c-steps 4] [--process-rounds 3]
                                        [--fresh-rounds 5] [--fresh-steps 30000] [--realworld GLOB] [--skip-processes]
"""
from __future__ import annotations

import argparse
import compileall
import os
import random
import statistics
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from gradcheck_l2c import trace


ROOT = Path(__file__).resolve().parent.parent


def mlp_workload(log: str = "after") -> Callable[[], None]:
    """One optimizer step of the op-bound MLP, logging the loss with .item() as scripts do: ``after`` the
    backward, ``before`` it (a cut of values whose gradient is still to come), or ``none`` (no cut at all)."""
    torch.manual_seed(0)
    layers = [layer for _ in range(20) for layer in (nn.Linear(64, 64), nn.LayerNorm(64), nn.GELU())]
    model = nn.Sequential(*layers, nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 64), torch.randint(0, 10, (8,))
    losses: list[float] = []

    def step() -> None:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        if log == "before":
            losses.append(loss.item())
        loss.backward()
        optimizer.step()
        if log == "after":
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
    from gradcheck_l2c_reference.l2c import L2CConfig, load_data, run_l2c

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


def shuffled_rounds(labels: list[str], rounds: int) -> list[list[str]]:
    """The order the configurations run in, round by round: shuffled anew each round, the same on every run."""
    shuffle = random.Random(0).sample
    return [shuffle(labels, len(labels)) for _ in range(rounds)]


def nan_checked():
    return trace(nan=True)


def grad_stats():
    return trace(grad_stats=True)


def anomaly():
    return torch.autograd.set_detect_anomaly(True)


#: Runs a program from a bare Python and prints its peak RSS last (a child forked from this process, which holds
#: torch, would count this process's memory as its own).
LAUNCHER = ("import os, subprocess, sys; child = subprocess.Popen(sys.argv[1:]); _, _, usage = os.wait4(child.pid, 0); "
            "child.returncode = 0; sys.stdout.flush(); print(usage.ru_maxrss)")


def run_process(argv: list[str], cwd: Path) -> tuple[float, float, str]:
    """Run one program to its end: wall seconds, peak RSS in MB, its stdout."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("REALWORLD_STATE", None)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", LAUNCHER, *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, check=True)
    seconds = time.perf_counter() - start
    *out, peak = done.stdout.splitlines()
    return seconds, int(peak) / 1024, "\n".join(out)


def process_workloads(fresh_steps: int, pattern: str) -> list[tuple[str, Path, list[str]]]:
    """(name, folder to run in, the program and its arguments) for the whole-program measurements."""
    programs = ROOT / "tests" / "realworld" / "programs"
    fresh = [str(ROOT / "benchmarks" / "fresh_leaves.py"), str(fresh_steps)]
    return [(f"fresh leaves, {fresh_steps:,} steps", ROOT, fresh),
            *((f"realworld {path.stem}", programs, [path.name]) for path in sorted(programs.glob(f"{pattern}.py")))]


def per_thousand(outs: list[str]) -> str:
    """``fresh_leaves.py``'s seconds per 1,000 steps at its start and at its end (median of three blocks), each block
    the fastest of the runs: a burst of the machine's that slows the last blocks of one run (123 -> 142 ms/1k in the
    fastest whole run, where the runs' fastest blocks held 123 -> 125) is no growth of the program's."""
    blocks = [min(times) for times in zip(*([float(t) for t in out.split()] for out in outs))]
    return f"{statistics.median(blocks[:3]) * 1e3:.0f} -> {statistics.median(blocks[-3:]) * 1e3:.0f} ms/1k"


def measure_processes(rounds: int, fresh_rounds: int, fresh_steps: int, pattern: str) -> None:
    print(f"\n{'program (whole process)':40} {'untraced':>9} {'traced':>9} {'ratio':>6} {'RSS untraced':>13} "
          f"{'RSS traced':>11}  per 1k steps, start -> end (untraced | traced)")
    ratios = []
    compileall.compile_dir(ROOT / "gradcheck_l2c", quiet=1)  # as an installed copy is (see the docstring)
    for name, cwd, program in process_workloads(fresh_steps, pattern):
        fresh = program[0].endswith("fresh_leaves.py")
        runs: dict[str, list[tuple[float, float, str]]] = {"untraced": [], "traced": []}
        for _ in range(fresh_rounds if fresh else rounds):
            runs["untraced"].append(run_process([sys.executable, *program], cwd))
            runs["traced"].append(run_process([sys.executable, "-m", "gradcheck_l2c", "trace", *program], cwd))
        plain, traced = (min(seconds for seconds, _, _ in runs[k]) for k in ("untraced", "traced"))
        rss = [statistics.median(r for _, r, _ in runs[k]) for k in ("untraced", "traced")]
        blocks = ""
        if fresh:
            blocks = "  " + " | ".join(per_thousand([out for _, _, out in runs[k]]) for k in ("untraced", "traced"))
        else:
            ratios.append(traced / plain)
        print(f"{name:40} {plain:8.2f}s {traced:8.2f}s {traced / plain:5.2f}x {rss[0]:10.0f} MB {rss[1]:8.0f} MB{blocks}")
    if ratios:
        print(f"{'realworld programs, median ratio':40} {'':9} {'':9} {statistics.median(ratios):5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200, help="MLP steps per measurement")
    parser.add_argument("--l2c-steps", type=int, default=4, help="L2C runs per measurement")
    parser.add_argument("--process-rounds", type=int, default=3, help="runs of each whole program, untraced and traced")
    parser.add_argument("--fresh-rounds", type=int, default=5, help="runs of fresh_leaves.py, untraced and traced")
    parser.add_argument("--fresh-steps", type=int, default=30_000, help="steps of fresh_leaves.py")
    parser.add_argument("--realworld", default="*", help="which tests/realworld programs (a glob of their names)")
    parser.add_argument("--skip-processes", action="store_true", help="only the workloads in this process")
    args = parser.parse_args()
    if min(args.rounds, args.process_rounds, args.fresh_rounds) < 1:
        parser.error("--rounds, --process-rounds and --fresh-rounds must be at least 1")
    torch.set_num_threads(1)
    workloads = [("MLP 20x[Linear,LayerNorm,GELU]", mlp_workload(), args.steps),
                 ("MLP, no cut (no .item())", mlp_workload("none"), args.steps),
                 ("MLP, loss.item() before backward", mlp_workload("before"), args.steps),
                 ("reference L2C (CNN)", l2c_workload(), args.l2c_steps),
                 ("realworld transformer_encoder", realworld_workload(), args.steps // 4)]
    contexts = {"untraced": nullcontext, "traced": trace, "nan": nan_checked, "stats": grad_stats, "anomaly": anomaly}
    print(f"{'workload':34} {'untraced':>10} {'traced':>8} {'--nan':>8} {'stats':>8} {'anomaly':>8} "
          f"{'nan/traced':>11} {'stats/traced':>13}")
    for name, step, steps in workloads:
        times: dict[str, list[float]] = {label: [] for label in contexts}
        for order in shuffled_rounds(list(contexts), args.rounds):
            for label in order:
                times[label].append(measure(step, contexts[label], steps))
        base = min(times["untraced"])
        ratios = [min(times[label]) / base for label in ("traced", "nan", "stats", "anomaly")]
        print(f"{name:34} {base * 1e3:8.2f}ms " + " ".join(f"{ratio:7.2f}x" for ratio in ratios)
              + f" {ratios[1] / ratios[0]:10.2f}x {ratios[2] / ratios[0]:12.2f}x")
    if not args.skip_processes:
        measure_processes(args.process_rounds, args.fresh_rounds, args.fresh_steps, args.realworld)


if __name__ == "__main__":
    main()
