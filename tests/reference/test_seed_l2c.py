"""The question's script: it runs, reproduces `alpha.grad is None`, and its docstring points at the real lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.optim as optim

import reference.seed_l2c as seed

ROOT = Path(__file__).resolve().parents[2]
SOURCE = Path(seed.__file__)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("command", [["reference/seed_l2c.py"], ["-m", "reference.seed_l2c"]])
def test_script_prints_that_alpha_has_no_gradient(command):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, *command], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    nodes, rounds = len(seed.neighbour_sets), seed.T
    assert proc.stdout.splitlines() == ["gradient of alpha is None"] * (nodes * rounds)


def test_import_runs_nothing(capsys):
    assert callable(seed.main) and callable(seed.train)
    assert capsys.readouterr().out == ""


def test_docstring_line_references_name_the_code_on_those_lines():
    lines = SOURCE.read_text().splitlines()
    refs = re.findall(r"line\s+(\d+)\s+``(.+?)``", seed.__doc__)
    assert len(refs) >= 16
    for number, code in refs:
        assert code in lines[int(number) - 1], f"line {number} does not contain {code!r}"
    for number in re.search(r"also lines ([\d, ]+)", seed.__doc__).group(1).split(", "):
        assert "state_dict().copy()" in lines[int(number) - 1]


def test_loop_leaves_alpha_without_gradient_and_every_snapshot_aliasing_the_live_weights(capsys):
    theta, accuracies = seed.train()
    assert "gradient of alpha is None" in capsys.readouterr().out
    assert len(accuracies) == len(seed.neighbour_sets) and all(isinstance(a, float) for a in accuracies)
    first, second = theta[0], theta[1]
    assert first["fc1.weight"].data_ptr() == second["fc1.weight"].data_ptr()  # one model for all nodes


def test_shallow_state_dict_copy_follows_the_optimizer():
    model = seed.CNNCifar()
    snapshot = model.state_dict().copy()
    before = snapshot["fc3.bias"].clone()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    optimizer.step()
    assert not torch.equal(model.fc3.bias, before)
    assert torch.equal(snapshot["fc3.bias"], model.fc3.bias)
    assert any(p is model.alpha for p in optimizer.param_groups[0]["params"])  # alpha in the local SGD too


def test_writing_mixing_weights_into_a_cloned_w_keeps_the_gradient():
    """The answer says `model.w[i] = ...` cuts the gradient; autograd records the write (CopySlices)."""
    model = seed.CNNCifar()
    model.w = model.w.clone()
    model.w[0] = seed.compute_mixing_weights(model.alpha[0], {1, 2})
    assert type(model.w.grad_fn).__name__ == "CopySlices"
    model.w[0][1].backward()
    assert model.alpha.grad is not None
    assert model.alpha.grad[0, 1] != 0 and model.alpha.grad[0, 2] != 0


def test_item_and_load_state_dict_are_two_independent_cuts():
    model = seed.CNNCifar()
    model.w = model.w.clone()
    model.w[0] = seed.compute_mixing_weights(model.alpha[0], {1, 2})
    theta = {name: p.detach().clone() for name, p in model.named_parameters()}
    with_item = {name: v - model.w[0][1].item() * v for name, v in theta.items()}
    without_item = {name: v - model.w[0][1] * v for name, v in theta.items()}
    assert not with_item["fc1.weight"].requires_grad  # .item(): no link to alpha at all
    assert without_item["fc1.weight"].requires_grad
    model.load_state_dict(without_item)  # copies values under no_grad: the link is dropped again
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    assert model.alpha.grad is None
