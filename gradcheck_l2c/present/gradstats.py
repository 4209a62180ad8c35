"""`--grad-stats` outputs: a table of each weight's gradient norms on stderr, the numbers in the ``--json`` report
(``grad_stats``), and a per-layer plot (``grad_stats.png`` in the ``--render`` folder, when matplotlib is there)."""
from __future__ import annotations

import json
import os
import statistics
import sys
from collections.abc import Sequence
from typing import Any

from gradcheck_l2c.present.jsonreport import write_json
from gradcheck_l2c.records import LayerGradients

PLOT = "grad_stats.png"


def format_table(layers: Sequence[LayerGradients]) -> str:
    """One line per weight (two or more dimensions): first and last gradient norm, the smallest and largest,
    the last gradient-to-weight ratio, the last and median update-to-weight ratio of the optimizer's steps
    (``-`` when no step changed it), dead units and what was found."""
    rows = [layer for layer in layers if len(layer.shape) >= 2]
    if not rows:
        return "gradient norms: no weight got a gradient\n"
    width = max(len(layer.name) for layer in rows)
    steps = max(len(r.update_ratios) for r in rows)
    lines = [f"gradient norms per weight over {max(len(r.grad_norms) for r in rows)} backwards and {steps} optimizer "
             "steps: first, last, min, max, last |grad|/|weight|, last and median |update|/|weight|, dead units"]
    for layer in rows:
        g = layer.grad_norms
        ratio = g[-1] / layer.weight_norms[-1] if layer.weight_norms[-1] else float("inf")
        updates = (f"{layer.update_ratios[-1]:9.3g}  {statistics.median(layer.update_ratios):9.3g}"
                   if layer.update_ratios else f"{'-':>9}  {'-':>9}")
        flags = f"  {', '.join(layer.flags)}" if layer.flags else ""
        lines.append(f"  {layer.name:<{width}}  {g[0]:9.3g}  {g[-1]:9.3g}  {min(g):9.3g}  {max(g):9.3g}  "
                     f"{ratio:9.3g}  {updates}  {layer.dead}/{layer.units}{flags}")
    return "\n".join(lines) + "\n"


def plot(layers: Sequence[LayerGradients], path: str) -> bool:
    """Draw each weight's gradient norm over the backwards and its update ratio over the steps (log scale), and
    its last gradient ratio; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [layer for layer in layers if len(layer.shape) >= 2]
    figure, (over_time, updates, last) = plt.subplots(1, 3, figsize=(17, 4.5))
    for layer in rows:
        over_time.plot(layer.backwards, [max(g, 1e-45) for g in layer.grad_norms], label=layer.name)
        updates.plot(layer.steps, [max(r, 1e-45) for r in layer.update_ratios], label=layer.name)
    over_time.set(yscale="log", xlabel="backward", ylabel="|grad|", title="gradient norm per weight")
    updates.set(yscale="log", xlabel="optimizer step", ylabel="|update| / |weight|", title="update per weight")
    ratios = [max(r.grad_norms[-1] / r.weight_norms[-1], 1e-45) if r.weight_norms[-1] else 1e-45 for r in rows]
    last.bar(range(len(rows)), ratios, color=["tab:red" if r.flags else "tab:blue" for r in rows])
    last.set(yscale="log", xlabel="weight (in order)", ylabel="|grad| / |weight|", title="at the last backward")
    if len(rows) <= 12:
        over_time.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return True


def write_grad_stats(layers: Sequence[LayerGradients], options: Any) -> int:
    """Print the table, add the numbers to the ``--json`` file and draw the plot into ``--render``; 1 when a
    file could not be written, else 0."""
    stderr = sys.stderr
    if not options.quiet:
        stderr.write(format_table(layers))
    code = 0
    if options.json:
        try:
            with open(options.json, encoding="utf-8") as handle:
                document = json.load(handle)
            document["grad_stats"] = [layer.to_dict() for layer in layers]
            write_json(options.json, document)
        except (OSError, ValueError) as error:
            print(f"gradcheck-l2c: error: --grad-stats: cannot add to {options.json!r}: {error}", file=stderr)
            code = 1
    if options.render:
        path = os.path.join(options.render, PLOT)
        try:
            drawn = plot(layers, path)
        except OSError as error:
            print(f"gradcheck-l2c: error: --grad-stats: cannot draw {path!r}: {error}", file=stderr)
            return 1
        if not options.quiet:
            print(f"gradcheck-l2c: {'drew the gradient norms in ' + path if drawn else 'the plot needs matplotlib'}",
                  file=stderr)
    return code
