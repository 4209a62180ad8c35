"""`trace(grad_stats=True)` / ``--grad-stats``: per-layer gradient norms over the run; the layers of a deep sigmoid
MLP whose gradient vanishes, the recurrent weights of an RNN whose gradient explodes and dead ReLU units are
flagged at the line that built them, and their healthy twins are not."""
from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from gradcheck_l2c import trace
from gradcheck_l2c.cli import main
from tests.conftest import Snippet

KINDS = ("vanishing_gradient", "exploding_gradient", "dead_units")
DEEP = """
import torch
from torch import nn
torch.manual_seed(0)
layers = []
for _ in range(20):
    layers += [nn.Linear(16, 16), nn.{act}()]  # <- layer
model = nn.Sequential(*layers, nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 16), torch.randn(32, 1)
for step in range(3):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
"""
RNN = """
import torch
from torch import nn
torch.manual_seed(0)
rnn = nn.RNN(8, 32, nonlinearity="relu")  # <- rnn
head = nn.Linear(32, 1)
with torch.no_grad():
    rnn.weight_hh_l0.mul_({scale})
opt = torch.optim.SGD([*rnn.parameters(), *head.parameters()], lr=1e-3)
x, y = torch.randn(40, 4, 8), torch.randn(4, 1)
for step in range(3):
    opt.zero_grad()
    out, _ = rnn(x)
    nn.functional.mse_loss(head(out[-1]), y).backward()
    opt.step()
"""
DEAD = """
import torch
from torch import nn
torch.manual_seed(0)
fc = nn.Linear(4, 8)  # <- fc
with torch.no_grad():
    fc.bias[:5] = {bias}
model = nn.Sequential(fc, nn.ReLU(), nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for step in range(10):
    opt.zero_grad()
    nn.functional.mse_loss(model(x), y).backward()
    opt.step()
"""


def _flags(t):
    return [f for f in t.findings if f.kind in KINDS]


def test_deep_sigmoid_mlp_vanishes_in_its_first_layers_and_gelu_twin_is_silent(tmp_path):
    snippet = Snippet(tmp_path / "deep.py", DEEP.format(act="Sigmoid"))
    t = snippet.run(grad_stats=True)
    (finding,) = _flags(t)
    assert (finding.kind, finding.severity, finding.line) == ("vanishing_gradient", "warning", snippet.line("layer"))
    assert finding.tensor.startswith("Sequential.0.weight")
    first = next(layer for layer in t.grad_stats if layer.name == "Sequential.0.weight")
    assert len(first.grad_norms) == 3 and first.flags == ("vanishing_gradient",)
    last = next(layer for layer in t.grad_stats if layer.name == "Sequential.40.weight")
    assert last.flags == () and last.grad_norms[0] > 1e-3
    assert not _flags(Snippet(tmp_path / "gelu.py", DEEP.format(act="GELU").replace("range(20)", "range(3)"))
                      .run(grad_stats=True))


def test_rnn_without_clipping_explodes_and_its_default_init_twin_does_not(tmp_path):
    snippet = Snippet(tmp_path / "rnn.py", RNN.format(scale=2.5))
    found = _flags(snippet.run(grad_stats=True))
    assert {f.kind for f in found} == {"exploding_gradient"}
    (rnn,) = [f for f in found if f.line == snippet.line("rnn")]  # the head behind it explodes as well
    assert "RNN.weight_hh_l0" in rnn.tensor
    assert not _flags(Snippet(tmp_path / "calm.py", RNN.format(scale=1.0)).run(grad_stats=True))


def test_dead_relu_units_are_counted_and_the_live_twin_is_silent(tmp_path):
    snippet = Snippet(tmp_path / "dead.py", DEAD.format(bias=-100.0))
    (finding,) = _flags(snippet.run(grad_stats=True))
    assert (finding.kind, finding.line) == ("dead_units", snippet.line("fc"))
    assert "5 of 8" in finding.message
    assert not _flags(Snippet(tmp_path / "live.py", DEAD.format(bias=0.1)).run(grad_stats=True))


def test_off_by_default(tmp_path):
    t = Snippet(tmp_path / "deep.py", DEEP.format(act="Sigmoid")).run()
    assert t.grad_stats == [] and not _flags(t)


def test_each_step_s_update_is_measured_beside_its_weight(tmp_path):
    """Plain SGD moves a weight by lr * its gradient: the recorded ratio is lr * |grad| / |weight| at every step."""
    t = Snippet(tmp_path / "dead.py", DEAD.format(bias=0.1)).run(grad_stats=True)
    layers = {layer.name: layer for layer in t.grad_stats}
    assert set(layers) == {"Sequential.0.weight", "Sequential.2.weight"}  # biases are not judged: not recorded
    for layer in layers.values():
        assert layer.steps == tuple(range(1, 11))
        expected = [0.01 * g / w for g, w in zip(layer.grad_norms, layer.weight_norms)]
        assert layer.update_ratios == pytest.approx(expected, rel=1e-3)


def test_a_step_without_gradients_moves_nothing_and_later_steps_are_sampled(tmp_path):
    code = DEAD.format(bias=0.1).replace("    opt.step()", "    opt.step()\n    opt.zero_grad()\n    opt.step()")
    layer = next(layer for layer in Snippet(tmp_path / "twice.py", code).run(grad_stats=True).grad_stats)
    assert layer.steps == (*range(1, 11), 20)  # each of the first ten steps, then every tenth
    ratios = dict(zip(layer.steps, layer.update_ratios))
    assert all(ratios[n] > 0 for n in (1, 3, 5, 7, 9))
    assert all(ratios[n] == 0 for n in (2, 4, 6, 8, 10, 20))  # after zero_grad(): no gradient, no move


def test_cli_writes_the_numbers_into_the_json_and_draws_the_plot(tmp_path, capsys):
    script = Snippet(tmp_path / "dead.py", DEAD.format(bias=-100.0))
    report, folder, page = tmp_path / "report.json", tmp_path / "out", tmp_path / "html"
    main(["trace", "--grad-stats", "--json", str(report), "--render", str(folder), "--html", str(page),
          str(script.path)])
    layers = {layer["name"]: layer for layer in json.loads(report.read_text())["grad_stats"]}
    assert layers["Sequential.0.weight"]["dead_units"] == 5 and len(layers["Sequential.0.weight"]["grad_norms"]) == 10
    assert layers["Sequential.0.weight"]["flags"] == ["dead_units"]
    assert layers["Sequential.2.weight"]["steps"] == list(range(1, 11))
    assert len(layers["Sequential.2.weight"]["update_ratios"]) == 10
    assert (folder / "grad_stats.png").stat().st_size > 0
    err = capsys.readouterr().err
    row = next(line for line in err.splitlines() if line.strip().startswith("Sequential.2.weight"))
    last_update = layers["Sequential.2.weight"]["update_ratios"][-1]
    assert f"{last_update:9.3g}" in row and "10 optimizer steps" in err
    index = (page / "index.html").read_text()  # the same numbers drawn inline: one line per weight in each chart
    plots = index.split("<h2>Gradient health</h2>")[1]
    assert plots.count("<svg ") == 2 and plots.count("<title>Sequential.0.weight</title>") == 2
    assert '<b class="flagged">dead_units</b>' in plots


def test_each_norm_is_its_own_gradient_s_and_weight_s_whatever_the_shapes():
    """Small tensors of one shape are reduced together, large and empty ones alone: every recorded pair is
    still the norm of one weight's gradient and of that weight; vectors and scalars are not recorded."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 300), nn.Linear(300, 300),
                          nn.LayerNorm(300), nn.Linear(300, 1))
    model.scale = nn.Parameter(torch.tensor(2.0))  # a 0-d parameter
    with trace(grad_stats=True) as t:
        for batch in range(2):
            (model(torch.randn(5, 4) + batch).sum() * model.scale).backward()
    params = [p for p in model.parameters() if p.dim() >= 2]
    recorded = sorted((layer.grad_norms[-1], layer.weight_norms[-1]) for layer in t.grad_stats)
    expected = sorted((p.grad.norm().item(), p.detach().norm().item()) for p in params)
    assert len(recorded) == len(params) and len(t.grad_stats[0].grad_norms) == 2
    assert [n for pair in recorded for n in pair] == pytest.approx([n for pair in expected for n in pair], rel=1e-6)
