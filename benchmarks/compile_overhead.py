"""Traced / untraced time of a torch.compile'd training script, whole runs side by side (compiling included).

The workload is a correct 8-layer MLP compiled with the given backends, trained for ``--steps`` steps; each
configuration runs as ``python script.py`` and as ``gradcheck-l2c trace script.py``, interleaved over
``--rounds`` rounds after one warm-up run (inductor's kernel cache), and the median wall time is used. The losses of both runs are compared bit for bit.

    python benchmarks/compile_overhead.py [--backends eager inductor] [--rounds 3] [--steps 200]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SCRIPT = '''
import sys
import time
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(*[layer for _ in range(8) for layer in (nn.Linear(64, 64), nn.GELU())], nn.Linear(64, 10))
compiled = torch.compile(model, backend=sys.argv[1])
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
losses = []
for step in range(int(sys.argv[2])):
    if step == 1:
        start = time.perf_counter()  # the steps after the first, which compiles
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(compiled(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
print(" ".join(value.hex() for value in losses))
print(time.perf_counter() - start)
'''


def run(command: list[str]) -> tuple[float, float, str]:
    """Wall time of the whole run, time of its compiled steps, and the losses it printed."""
    env = {name: value for name, value in os.environ.items() if name != "GRADCHECK_L2C_DISABLED"}
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    losses, steps = done.stdout.splitlines()
    return elapsed, float(steps), losses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=["eager", "inductor"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "compiled_train.py")
        with open(script, "w") as file:
            file.write(SCRIPT)
        for backend in options.backends:
            args = [script, backend, str(options.steps)]
            run([sys.executable, *args])  # warm-up: fills the compilers' caches for both configurations
            plain, traced, same = [], [], True
            for _ in range(options.rounds):
                *seconds, untraced_out = run([sys.executable, *args])
                plain.append(seconds)
                *seconds, traced_out = run([sys.executable, "-m", "gradcheck_l2c", "trace", "-q", *args])
                traced.append(seconds)
                same = same and untraced_out == traced_out
            (whole, steps), (traced_whole, traced_steps) = (
                [statistics.median(times[i] for times in runs) for i in (0, 1)] for runs in (plain, traced))
            print(f"backend={backend:9s} whole run: untraced {whole:5.1f} s, traced {traced_whole:5.1f} s "
                  f"({traced_whole / whole:4.2f}x); compiled steps: untraced {steps:5.2f} s, traced "
                  f"{traced_steps:5.2f} s ({traced_steps / steps:4.2f}x); losses bitwise equal: {same}")


if __name__ == "__main__":
    main()
