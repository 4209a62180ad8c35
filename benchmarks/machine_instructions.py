"""Machine instructions and first-level data-cache misses per step, untraced and traced, counted by valgrind's
cachegrind: the same on every run of one version (hash seed fixed, and the address-space layout with ``setarch -R``
where it exists: objects' ids decide how dicts and sets keyed by them probe, which moved the fresh-leaves count by 2.5%
between two runs of one version, and by 0.1% with the layout fixed), so two versions of the tool compare exactly where
this machine's timing noise (2-4 µs a step of the fresh-leaves loop, run to run) hides a change of a few percent.

Each configuration runs under cachegrind twice, for ``--base`` steps and for ``--base + --steps``: the difference,
over ``--steps``, is one step's work (importing torch and the tool, the same in both runs, cancels out). With
``--against REV``, the tool as committed at REV is counted beside the working tree's. A count says how much work a
change removed, not the time it saves: a traced step costs more than its instructions where it touches memory
the backward's kernels evicted from the caches (the D1 misses column shows part of that).

    python benchmarks/machine_instructions.py [--workload fresh mlp] [--steps 1000] [--base 200] [--against REV]

A step of ``l2c`` is a whole reference L2C run (2 rounds, 6 nodes): count it with ``--steps 2 --base 1`` (6-10 minutes
a configuration under cachegrind).

Needs valgrind (Debian: ``apt-get install -y valgrind``); each configuration takes 2-3 minutes, two run at a time.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
#: Runs a command with address-space randomisation off (util-linux's setarch), where the machine has it.
FIXED_LAYOUT = ["setarch", platform.machine(), "-R"] if shutil.which("setarch") else []


def fresh_workload() -> Callable[[], None]:
    """One step of `fresh_leaves.py`: a new ``requires_grad=True`` leaf, a small forward, a backward."""
    import torch

    weight = torch.randn(16, 16)

    def step() -> None:
        x = torch.randn(16, requires_grad=True)
        torch.tanh(weight @ x).pow(2).sum().backward()

    return step


def workloads() -> dict[str, Callable[[], Callable[[], None]]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import trace_overhead  # the in-process workloads, beside this script

    return {"fresh": fresh_workload, "mlp": trace_overhead.mlp_workload,
            "transformer": trace_overhead.realworld_workload, "l2c": trace_overhead.l2c_workload}


def run_child(workload: str, traced: bool, steps: int) -> None:
    """What runs under cachegrind: ``steps`` steps of the workload, traced or not."""
    import torch

    from gradcheck_l2c import trace

    torch.manual_seed(0)
    torch.set_num_threads(1)
    step = workloads()[workload]()
    with trace() if traced else nullcontext():
        for _ in range(steps):
            step()


def counted(workload: str, traced: bool, steps: int, package: Path) -> dict[str, int]:
    """Cachegrind's totals (``Ir``, ``D1mr``, ``D1mw`` ...) for one run of the child."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder, "cachegrind.out")
        env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([str(package), str(ROOT)]))
        subprocess.run([*FIXED_LAYOUT, "valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--cachegrind-out-file={out}",
                        sys.executable, __file__, "--child", workload, "traced" if traced else "untraced", str(steps)],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        events: list[str] = []
        for line in out.read_text().splitlines():
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:"):
                return dict(zip(events, map(int, line.split()[1:])))
    raise RuntimeError(f"cachegrind wrote no summary for {workload} ({'traced' if traced else 'untraced'})")


def per_step(runs: dict[tuple, dict[str, int]], config: tuple, base: int, steps: int) -> tuple[float, float]:
    """Instructions and D1 misses of one step: the longer run less the shorter one, over the steps between."""
    short, long = runs[(*config, base)], runs[(*config, base + steps)]
    misses = ("D1mr", "D1mw")
    return ((long["Ir"] - short["Ir"]) / steps,
            sum(long[event] - short[event] for event in misses) / steps)


def archived(rev: str, folder: Path) -> Path:
    """The tool's package as committed at ``rev``, unpacked into ``folder``."""
    archive = subprocess.run(["git", "archive", rev, "gradcheck_l2c"], cwd=ROOT, stdout=subprocess.PIPE, check=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", nargs="+", choices=["fresh", "mlp", "transformer", "l2c"], default=["fresh"])
    parser.add_argument("--steps", type=int, default=1000, help="steps counted (the difference of the two runs)")
    parser.add_argument("--base", type=int, default=200, help="steps of the shorter run (warms caches and the tool)")
    parser.add_argument("--against", metavar="REV", help="also count the tool as committed at this git revision")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        workload, mode, steps = args.child
        run_child(workload, mode == "traced", int(steps))
        return
    if args.steps < 1 or args.base < 1:
        parser.error("--steps and --base must be at least 1")
    with tempfile.TemporaryDirectory() as folder:
        versions = {"working tree": ROOT}
        if args.against:
            versions[args.against] = archived(args.against, Path(folder))
        configs = [(workload, "untraced", ROOT) for workload in args.workload]
        configs += [(workload, version, path) for workload in args.workload for version, path in versions.items()]
        jobs = [(workload, label, path, steps) for workload, label, path in configs
                for steps in (args.base, args.base + args.steps)]
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = pool.map(lambda job: counted(job[0], job[1] != "untraced", job[3], job[2]), jobs)
            runs = {(workload, label, steps): result for (workload, label, _, steps), result in zip(jobs, results)}
    print(f"{'workload':12} {'configuration':16} {'instructions/step':>18} {'ratio':>7} {'D1 misses/step':>15}")
    for workload in args.workload:
        untraced, _ = per_step(runs, (workload, "untraced"), args.base, args.steps)
        for label in ["untraced", *versions]:
            instructions, misses = per_step(runs, (workload, label), args.base, args.steps)
            print(f"{workload:12} {label[:16]:16} {instructions:18,.0f} {instructions / untraced:6.3f}x {misses:15,.0f}")


if __name__ == "__main__":
    main()
