"""``gradcheck-l2c demo``: trace the L2C question's script, then train the reference L2C for a few rounds.

``reference/seed_l2c.py`` is the code from the question in which ``alpha.grad`` stays ``None``: its
findings are the point of the demo, so they do not make it fail. ``reference/l2c.py`` is the
algorithm done right; a short run on small synthetic data shows alpha getting a gradient every round.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import TextIO

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.present.jsonreport import json_document, write_json
from gradcheck_l2c.present.textreport import display_path, format_report
from gradcheck_l2c.runner import (
    EXIT_FINDINGS,
    EXIT_OK,
    ScriptRunner,
    exit_code,
    is_terminal,
    traced_run,
    use_color,
)

#: The reference L2C's package: as the wheel installs it, or as the repository's folder (in a checkout).
REFERENCE_PACKAGES = ("gradcheck_l2c_reference", "reference")
#: Modules the bundled reference scripts import at the top beyond torch: the ``[reference]`` extra brings them.
REFERENCE_NEEDS = ("numpy", "tqdm")
#: The short L2C run: 4 nodes in 2 clusters for 8 rounds, a few seconds on a laptop CPU.
DEMO_NODES = 4
DEMO_CLUSTERS = 2
DEMO_ROUNDS = 8


def reference_package() -> str:
    """The name the reference L2C is importable under here; ``UsageError`` if it is not installed."""
    for name in REFERENCE_PACKAGES:
        if importlib.util.find_spec(name) is not None:
            return name
    raise UsageError(f"cannot find {REFERENCE_PACKAGES[0]}: install the project with its reference package")


def seed_script() -> str:
    """Path of the question's script, found through the reference package."""
    package = reference_package()
    spec = importlib.util.find_spec(f"{package}.seed_l2c")
    if spec is None or spec.origin is None:
        raise UsageError(f"cannot find {package}.seed_l2c: install the project with its reference package")
    return spec.origin


def check_reference_extra() -> None:
    """Say which install the demo needs before running it, rather than fail inside the reference scripts."""
    missing = [name for name in REFERENCE_NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        raise UsageError(f"the demo runs the bundled reference L2C, which needs {', '.join(missing)}: "
                         "pip install 'gradcheck-l2c[reference]'")


def run_demo(out_dir: str = "gradcheck-out", *, stream: TextIO | None = None) -> int:
    """Run both parts, writing ``report.json`` and the graphs into ``out_dir``; 0 when both ran."""
    stream = stream or sys.stdout
    seed = seed_script()
    check_reference_extra()
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out: cannot create {out_dir!r}: {exc.strerror}") from None

    _say(stream, f"1. The code from the question, traced: gradcheck-l2c trace {display_path(seed)}\n")
    runner = ScriptRunner(seed)
    runner.prepare()
    tracer, outcome = traced_run(runner, watch=None, record_sites=True, stream=sys.stderr,
                                 show_status=is_terminal(sys.stderr))
    status = exit_code(outcome, tracer.findings, "never")
    stream.write(format_report(tracer.findings, tracer.watched, color=use_color(stream)))
    json_path = os.path.join(out_dir, "report.json")
    write_json(json_path, json_document(script=seed, argv=[seed], exit_code=status,
                                        watched=tracer.watched, findings=tracer.findings))
    from gradcheck_l2c.present.drawn import write_drawn

    drawn = write_drawn(tracer, render=out_dir, html=os.path.join(out_dir, "html"))
    _say(stream, f"\nWrote {json_path}; " + "; ".join(drawn.lines) + (f"\n{drawn.hint}" if drawn.hint else ""))
    if status != EXIT_OK:
        _say(stream, f"The question's script itself failed (exit status {status}); stopping here.")
        return EXIT_FINDINGS

    _say(stream, f"\n2. The reference L2C (reference/l2c.py), {DEMO_ROUNDS} rounds on {DEMO_NODES} nodes of "
                 f"synthetic data in {DEMO_CLUSTERS} clusters.\n"
                 "   Each node's aggregate is computed from alpha and the network runs on it through "
                 "torch.func.functional_call:\n"
                 "   no .item(), no load_state_dict, so the validation loss reaches alpha.\n")
    _train_l2c(stream)
    return EXIT_OK


def _train_l2c(stream: TextIO) -> None:
    """Run the short L2C and print, per round, alpha's gradient per node and whom the nodes learned to trust."""
    l2c = importlib.import_module(f"{reference_package()}.l2c")
    L2CConfig, run_l2c = l2c.L2CConfig, l2c.run_l2c

    result = run_l2c(L2CConfig(nodes=DEMO_NODES, clusters=DEMO_CLUSTERS, rounds=DEMO_ROUNDS, t0=DEMO_ROUNDS))
    uniform = (DEMO_NODES // DEMO_CLUSTERS - 1) / (DEMO_NODES - 1)
    norms_header = "|alpha.grad| per node"
    width = max(len(norms_header), 8 * DEMO_NODES - 1)
    _say(stream, f"   round  {norms_header:<{width}}  same-cluster weight (uniform {uniform:.2f})  test accuracy")
    for round_index in range(DEMO_ROUNDS):
        norms = " ".join(f"{norm:.1e}" for norm in result.alpha_grad_norms[round_index].tolist())
        share = result.same_cluster_share[round_index]
        accuracy = result.accuracies[round_index].mean().item()
        _say(stream, f"   {round_index + 1:>5}  {norms:<{width}}  {share:<34.2f}  {accuracy:.0%}")
    _say(stream, f"\n   Smallest |alpha.grad| over all rounds and nodes: {result.alpha_grad_norms.min():.1e}.")


def _say(stream: TextIO, text: str) -> None:
    print(text, file=stream, flush=True)
