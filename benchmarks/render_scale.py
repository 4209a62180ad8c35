"""How long drawing an autograd graph takes as graphs grow: gradcheck-l2c's ``render`` next to torchviz.

Four graphs: torchvision's resnet50 and vit_b_16 (random weights, one 224x224 image), an ``nn.LSTMCell``
unrolled 10,000 steps (about 150k autograd nodes) and a chain of 1,000,000 additions. For each, it times
``render`` (walk, select, collapse, build the Digraph) and Graphviz ``dot`` to SVG, ``render`` watching
one parameter and one unreached tensor, ``render(full=True)`` (DOT source only), then ``torchviz.make_dot``
and ``dot``. torchviz's walk is recursive, so each of its attempts runs in a child process with a
timeout and the table says "RecursionError", "timeout" or "crash" where it gets no image.

Walking a graph from Python gives its nodes Python objects; with torch 2.14, freeing such a graph when
it is deep and holds saved tensors (the LSTM) then recurses in C++ and overflows the default 8 MB stack.
So the measurements run in a thread with a large stack, and the torchviz child leaves with ``os._exit``.

    python benchmarks/render_scale.py [--timeout 60] [--cases resnet50,chain_1m]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch
import torchvision

CHAIN_OPS = 1_000_000
LSTM_STEPS = 10_000
STACK_BYTES = 1 << 30  # for freeing deep graphs whose nodes were seen from Python


def build_resnet50() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model = torchvision.models.resnet50(weights=None)
    return model(torch.randn(1, 3, 224, 224)).sum(), dict(model.named_parameters())


def build_vit_b_16() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model = torchvision.models.vit_b_16(weights=None)
    return model(torch.randn(1, 3, 224, 224)).sum(), dict(model.named_parameters())


def build_lstm_cell() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    cell = torch.nn.LSTMCell(16, 32)
    x = torch.randn(1, 16)
    h, c = torch.zeros(1, 32), torch.zeros(1, 32)
    for _ in range(LSTM_STEPS):
        h, c = cell(x, (h, c))
    return h.sum(), dict(cell.named_parameters())


def build_chain() -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    x = torch.ones(1, requires_grad=True)
    y = x
    for _ in range(CHAIN_OPS):
        y = y + 1
    return y, {"x": x}


CASES = {
    "resnet50": build_resnet50,
    "vit_b_16": build_vit_b_16,
    f"lstm_cell_{LSTM_STEPS // 1000}k": build_lstm_cell,
    "chain_1m": build_chain,
}


def dot_to_svg(source: str, out: Path, timeout: float) -> float | str:
    """Seconds ``dot -Tsvg`` took, or why it gave no image."""
    start = time.perf_counter()
    try:
        done = subprocess.run(["dot", "-Tsvg", "-o", str(out)], input=source.encode(), capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout"
    return time.perf_counter() - start if done.returncode == 0 else "crash"


def torchviz_child(case: str, timeout: float) -> None:
    """In a child process: build ``case``, run make_dot and dot, print one JSON line per step."""
    from torchviz import make_dot

    loss, params = CASES[case]()
    start = time.perf_counter()
    try:
        dot = make_dot(loss, params=params)
    except RecursionError:
        print(json.dumps({"make_dot": "RecursionError"}), flush=True)
        return
    print(json.dumps({"make_dot": time.perf_counter() - start}), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps({"dot": dot_to_svg(dot.source, Path(tmp) / "torchviz.svg", timeout)}), flush=True)


def run_torchviz(case: str, timeout: float) -> dict[str, float | str]:
    """torchviz's times for ``case`` from a child process; a child killed or dead reads as timeout/crash."""
    command = [sys.executable, __file__, "--torchviz-child", case, "--timeout", str(timeout)]
    result: dict[str, float | str] = {}
    try:
        done = subprocess.run(command, capture_output=True, timeout=2 * timeout + 60)  # + 60 s to build
        stdout, crashed = done.stdout, done.returncode != 0
    except subprocess.TimeoutExpired as stopped:
        stdout, crashed = stopped.stdout or b"", False
    for line in stdout.decode().splitlines():
        result.update(json.loads(line))
    missing = "crash" if crashed else "timeout"
    result.setdefault("make_dot", missing)
    if isinstance(result["make_dot"], float):
        result.setdefault("dot", missing)
    return result


def measure(case: str, timeout: float) -> dict[str, object]:
    from gradcheck_l2c.present.draw.render import render, save_graph
    from gradcheck_l2c.record.graph import iter_nodes

    start = time.perf_counter()
    loss, params = CASES[case]()
    row: dict[str, object] = {"graph": case, "build": time.perf_counter() - start}
    row["nodes"] = sum(1 for _ in iter_nodes([loss.grad_fn]))
    start = time.perf_counter()
    dot = render(loss, params=params)
    row["ours"] = time.perf_counter() - start
    row["boxes"] = sum(1 for line in dot.body if " [label=" in line) - 1  # the legend is no graph node
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        saved = save_graph(dot, Path(tmp) / case, "svg", timeout=timeout)
        row["ours_dot"] = time.perf_counter() - start if saved.note is None else "timeout"
    first = next(iter(params))
    watch = {first: params[first], "unreached": torch.zeros(1, requires_grad=True)}
    start = time.perf_counter()
    render(loss, params=params, watch=watch)
    row["ours_watch"] = time.perf_counter() - start
    start = time.perf_counter()
    render(loss, params=params, full=True)
    row["ours_full"] = time.perf_counter() - start
    del loss, params, dot
    gc.collect()
    tv = run_torchviz(case, timeout)
    row["tv"], row["tv_dot"] = tv["make_dot"], tv.get("dot", "-")
    return row


def table(rows: list[dict[str, object]]) -> str:
    columns = [("graph", "graph"), ("nodes", "autograd nodes"), ("build", "build s"), ("ours", "render() s"),
               ("ours_dot", "dot->svg s"), ("boxes", "boxes drawn"), ("ours_watch", "render(watch=...) s"),
               ("ours_full", "render(full=True) s"),
               ("tv", "torchviz make_dot s"), ("tv_dot", "torchviz dot->svg s")]

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.2f}" if value >= 0.1 else f"{value:.3f}"
        return f"{value:,}" if isinstance(value, int) else str(value)

    lines = ["| " + " | ".join(title for _, title in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(row.get(key, "-")) for key, _ in columns) + " |" for row in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for each make_dot and each dot run")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, from {', '.join(CASES)}")
    parser.add_argument("--torchviz-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.torchviz_child:
        torchviz_child(args.torchviz_child, args.timeout)
        sys.stdout.flush()
        os._exit(0)  # skip freeing the graph at exit: it may be too deep for the main thread's stack
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    torch.manual_seed(0)
    rows: list[dict[str, object]] = []

    def measure_all() -> None:
        for case in cases:
            rows.append(measure(case, args.timeout))
            print(f"done: {case}", file=sys.stderr, flush=True)

    threading.stack_size(STACK_BYTES)
    worker = threading.Thread(target=measure_all)
    worker.start()
    worker.join()
    print(table(rows))
    return 0 if len(rows) == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main())
