"""The reference L2C: exact gradients for alpha, learning on clustered data, baselines and the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn as nn

from reference import data as data_mod
from reference.local_step import Layout
from reference.l2c import (
    L2CConfig,
    L2CConfigError,
    aggregate,
    fixed_mixing,
    main,
    mixing_weights,
    prune,
    run_l2c,
    same_cluster_share,
    validation_loss,
)

ROOT = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def tiny_config(**overrides) -> L2CConfig:
    base = dict(nodes=4, rounds=3, local_epochs=1, t0=1, k0=1, device="cpu", seed=3)
    return L2CConfig(**{**base, **overrides})


@pytest.fixture(scope="module")
def tiny_data() -> data_mod.FederatedData:
    return data_mod.synthetic(4, clusters=2, train=16, val=8, test=16, seed=3)


@pytest.fixture(scope="module")
def clustered() -> dict:
    """Six nodes in two label-conflicting clusters; L2C and uniform mixing trained on the same data."""
    data = data_mod.synthetic(6, clusters=2, train=48, val=32, test=60, noise=4.0, seed=0)
    config = dict(nodes=6, rounds=10, t0=4, k0=2, device="cpu", seed=0)
    return {
        "data": data,
        "l2c": run_l2c(L2CConfig(algo="l2c", **config), data),
        "uniform": run_l2c(L2CConfig(algo="uniform", **config), data),
    }


def test_mixing_weights_are_a_softmax_over_the_neighbourhood():
    alpha_i = torch.tensor([0.5, -1.0, 2.0, 0.0])
    neighbours = torch.tensor([True, False, True, True])
    w = mixing_weights(alpha_i, neighbours)
    expected = torch.exp(alpha_i) * neighbours / (torch.exp(alpha_i) * neighbours).sum()
    torch.testing.assert_close(w, expected)
    assert w[1] == 0


def test_alpha_gradient_through_the_aggregation_matches_finite_differences():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.LogSoftmax(dim=1)).double()
    layout = Layout(model)
    theta_i = layout.flatten(model)
    deltas = 0.5 * torch.randn(3, layout.size, dtype=torch.float64)
    x, y = torch.randn(5, 4, dtype=torch.float64), torch.tensor([0, 1, 2, 1, 0])
    neighbours = torch.tensor([True, True, True])

    def objective(alpha_i):
        return validation_loss(model, layout.unflatten(aggregate(theta_i, deltas, alpha_i, neighbours)), x, y)

    alpha_i = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(objective, (alpha_i,))
    objective(alpha_i).backward()
    assert alpha_i.grad.abs().min() > 0


def test_alpha_of_a_non_neighbour_gets_zero_gradient():
    """``deltas`` holds only the neighbours' changes; the aggregate is the softmax over them."""
    model = nn.Sequential(nn.Linear(2, 2), nn.LogSoftmax(dim=1)).double()
    layout = Layout(model)
    theta_i = layout.flatten(model)
    deltas = torch.randn(2, layout.size, dtype=torch.float64)
    alpha_i = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    neighbours = torch.tensor([True, False, True])
    aggregated = aggregate(theta_i, deltas, alpha_i, neighbours)
    torch.testing.assert_close(aggregated, theta_i - 0.5 * deltas[0] - 0.5 * deltas[1])
    loss = validation_loss(model, layout.unflatten(aggregated), torch.randn(4, 2).double(), torch.tensor([0, 1, 1, 0]))
    loss.backward()
    assert alpha_i.grad[1] == 0 and alpha_i.grad[0] != 0


def test_alpha_is_a_parameter_with_gradient_for_every_node_in_every_round(tiny_data):
    result = run_l2c(tiny_config(), tiny_data)
    assert result.alpha_grad_norms.shape == (3, 4)
    assert (result.alpha_grad_norms > 0).all()
    assert result.alpha.shape == (4, 4) and not result.alpha.requires_grad
    torch.testing.assert_close(result.mixing.sum(dim=1), torch.ones(4))


def test_same_seed_gives_bitwise_identical_runs(tiny_data):
    a, b = run_l2c(tiny_config(), tiny_data), run_l2c(tiny_config(), tiny_data)
    assert torch.equal(a.alpha, b.alpha)
    assert all(torch.equal(a.params[k], b.params[k]) for k in a.params)
    c = run_l2c(tiny_config(seed=4), tiny_data)
    assert not torch.equal(a.params["fc1.weight"], c.params["fc1.weight"])


def test_l2c_puts_its_weight_on_its_own_cluster(clustered):
    l2c, uniform_share = clustered["l2c"], 2 / 5  # two same-cluster nodes among five neighbours
    assert clustered["uniform"].same_cluster_share[-1] == pytest.approx(uniform_share)
    assert l2c.same_cluster_share[3] > uniform_share + 0.05  # before pruning: alpha alone
    assert l2c.same_cluster_share[-1] > uniform_share + 0.3


def test_pruning_removes_mostly_cross_cluster_edges(clustered):
    l2c = clustered["l2c"]
    assert len(l2c.removed_edges) == 6 * 2
    assert all(i != j for i, j in l2c.removed_edges)
    assert l2c.removed_cross_cluster_share >= 0.8
    assert all(not l2c.adjacency[i, j] for i, j in l2c.removed_edges)
    assert all(l2c.mixing[i, j] == 0 for i, j in l2c.removed_edges)


def test_l2c_beats_uniform_mixing(clustered):
    assert clustered["l2c"].mean_accuracy > clustered["uniform"].mean_accuracy + 0.15


def test_baseline_mixing_matrices():
    adjacency = torch.ones(4, 4, dtype=torch.bool)
    clusters = (0, 0, 1, 1)
    assert torch.equal(fixed_mixing("local", adjacency, clusters), torch.eye(4))
    assert torch.equal(fixed_mixing("uniform", adjacency, clusters), torch.full((4, 4), 0.25))
    oracle = fixed_mixing("oracle", adjacency, clusters)
    assert torch.equal(oracle, torch.tensor([[0.5, 0.5, 0, 0], [0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5], [0, 0, 0.5, 0.5]]))
    assert same_cluster_share(oracle, clusters) == 1.0


def test_baselines_run_through_the_same_loop(tiny_data):
    local = run_l2c(tiny_config(algo="local"), tiny_data)
    assert local.alpha is None and not local.removed_edges
    assert torch.equal(local.mixing, torch.eye(4))
    assert (local.alpha_grad_norms == 0).all()


def test_oracle_without_clusters_is_a_clear_error(tiny_data):
    no_clusters = data_mod.FederatedData("cifar10", tiny_data.nodes, 10, None)
    with pytest.raises(L2CConfigError, match="oracle needs known clusters"):
        run_l2c(tiny_config(algo="oracle"), no_clusters)
    with pytest.raises(L2CConfigError, match="valid names: l2c, local, uniform, oracle"):
        run_l2c(tiny_config(algo="gossip"), tiny_data)


def test_prune_drops_the_least_weighted_neighbours_never_itself():
    adjacency = torch.ones(3, 3, dtype=torch.bool)
    mixing = torch.tensor([[0.1, 0.5, 0.4], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4]])
    removed = prune(adjacency, mixing, k0=1)
    assert removed == [(0, 2), (1, 2), (2, 0)]
    assert adjacency.diagonal().all()
    assert prune(adjacency, mixing, k0=5) == [(0, 1), (1, 0), (2, 1)]
    assert torch.equal(adjacency, torch.eye(3, dtype=torch.bool))


def test_cli_writes_summary_and_heatmap(tmp_path, capsys):
    args = ["--nodes", "4", "--rounds", "2", "--t0", "0", "--k0", "1", "--device", "cpu", "--out", str(tmp_path)]
    assert main(args) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["algo"] == "l2c" and len(summary["mean_accuracy_per_round"]) == 2
    assert len(summary["removed_edges"]) == 4
    assert len(summary["mixing_matrix"]) == 4 and summary["clusters"] == [0, 0, 1, 1]
    assert (tmp_path / "mixing.png").read_bytes().startswith(b"\x89PNG")
    assert "final mean test accuracy" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--dataset", "imagenet"], "unknown dataset 'imagenet'; valid names: synthetic, digits, cifar10"),
        pytest.param(["--dataset", "cifar10", "--data-root", "{tmp}/nowhere"], "pass --download",
                     marks=pytest.mark.needs_torchvision),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, args, expected):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "reference.l2c", *args, "--out", str(tmp_path / "out")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert lines[0].startswith("error: ") and expected in lines[0]
    assert not (tmp_path / "out").exists()
