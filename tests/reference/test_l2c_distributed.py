"""The reference L2C split over processes: two gloo processes under torchrun give one process's answer, bitwise.

Every torchrun here is two CPU processes of a few rounds on a handful of small nodes (seconds of work) with a
subprocess timeout, so a hang fails the test instead of blocking the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from reference.comm import CommError, Group, plan, resolve_backend
from reference.l2c import L2CConfig, L2CConfigError, run_l2c

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 120
#: What a rank prints when torch's gloo teardown races at process exit, after its work is done; seen on a
#: loaded machine, never reproduced on demand. Such a run is repeated once.
TEARDOWN_ABORT = "terminate called without an active exception"


def environment() -> dict[str, str]:
    """One thread per process, so one and two processes run the same kernels; the worktree importable."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    env.pop("WORLD_SIZE", None)
    return env


def run(command: list[str]) -> subprocess.CompletedProcess:
    """Run once more after torch's gloo teardown abort at exit (see `TEARDOWN_ABORT`); fail on anything else."""
    proc = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=TIMEOUT_S)
    if proc.returncode != 0 and TEARDOWN_ABORT in proc.stderr:
        proc = subprocess.run(command, cwd=ROOT, env=environment(), capture_output=True, text=True, timeout=TIMEOUT_S)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def torchrun(*args: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *args]


def l2c_summary(tmp_path: Path, processes: int, args: list[str]) -> dict:
    out = tmp_path / f"p{processes}"
    l2c = ["-m", "reference.l2c", *args, "--threads", "1", "--out", str(out)]
    run(torchrun(*l2c) if processes == 2 else [sys.executable, *l2c])
    return json.loads((out / "summary.json").read_text())


SAME = ("final_accuracies", "mean_accuracy_per_round", "mixing_matrix", "removed_edges", "same_cluster_share_per_round")


@pytest.mark.parametrize(
    "args",
    [
        ["--nodes", "5", "--rounds", "3", "--local-epochs", "1", "--t0", "1", "--k0", "2"],
        ["--dataset", "digits", "--partition", "permuted", "--nodes", "5", "--rounds", "3", "--t0", "1", "--k0", "2",
         "--local-step", "vmap", "--vmap-chunk", "2"],
    ],
    ids=["synthetic-loop", "digits-vmap"],
)  # fmt: skip
def test_two_processes_give_the_same_answer_as_one_bitwise(tmp_path, args):
    """Nodes 0-1 and 2-4 on two processes: per-node generators and fixed-size kernels make every number equal."""
    one, two = l2c_summary(tmp_path, 1, args), l2c_summary(tmp_path, 2, args)
    assert (one["processes"], one["backend"], two["processes"], two["backend"]) == (1, None, 2, "gloo")
    assert one["local_step"] == two["local_step"] == ("vmap" if "vmap" in args else "loop")
    for key in SAME:
        assert one[key] == two[key], key
    assert len(one["removed_edges"]) == 5 * 2


def test_after_pruning_only_the_remaining_neighbours_changes_travel(tmp_path):
    summary = l2c_summary(tmp_path, 2, ["--nodes", "4", "--rounds", "2", "--local-epochs", "1", "--t0", "0", "--k0", "2"])
    traffic = summary["bytes_per_round"]
    row = 62006 * 4  # one float32 change vector of CNNCifar
    assert traffic["one_node_per_machine"] == {"first_round": 4 * 3 * row, "last_round": 4 * 1 * row}
    between = traffic["between_processes"]
    assert between["first_round"] == 2 * 2 * row  # each process needs both of the other's nodes
    assert between["last_round"] < between["first_round"]


def test_each_process_holds_and_exchanges_only_what_its_nodes_use():
    needs = torch.eye(5, dtype=torch.bool)
    needs[0, 3] = needs[1, 3] = needs[4, 0] = needs[2, 1] = True
    first = plan(Group(rank=0, world=2), needs)  # nodes 0, 1
    assert first.held == (0, 1, 3) and first.own_at == 0
    assert first.sends == ((1, (0, 1)),) and first.recvs == ((1, 2, 1),)
    second = plan(Group(rank=1, world=2), needs)  # nodes 2, 3, 4
    assert second.held == (0, 1, 2, 3, 4) and second.own_at == 2
    assert second.sends == ((0, (3,)),) and second.recvs == ((0, 0, 2),)
    assert first.node_rows == second.node_rows == 4
    assert first.process_rows == second.process_rows == 3  # node 3 to process 0; nodes 0 and 1 to process 1
    single = plan(Group(), needs)
    assert single.held == (0, 1, 2, 3, 4) and not single.sends and not single.recvs and single.process_rows == 0


def test_more_processes_than_nodes_is_a_clear_error():
    with pytest.raises(L2CConfigError, match="2 nodes cannot be split over 3 processes"):
        run_l2c(L2CConfig(nodes=2, rounds=1, device="cpu"), group=Group(rank=0, world=3))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on machines without CUDA")
def test_backend_choice():
    assert resolve_backend("auto") == "gloo"
    with pytest.raises(CommError, match="--backend nccl needs a CUDA device"):
        resolve_backend("nccl")
    with pytest.raises(CommError, match="valid names: auto, gloo, nccl"):
        resolve_backend("mpi")


def test_traced_under_torchrun_is_silent_and_alpha_learns_on_every_rank(tmp_path):
    """``torchrun -m gradcheck_l2c trace -m reference.l2c``; rank 0 writes one JSON report merged from both."""
    run(torchrun("-m", "gradcheck_l2c", "trace", "--json", str(tmp_path / "report.json"), "-m", "reference.l2c",
                 "--nodes", "4", "--rounds", "2", "--local-epochs", "1", "--t0", "0", "--k0", "1", "--threads", "1",
                 "--out", str(tmp_path / "out")))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["exit_code"] == 0
    assert [f for f in report["findings"] if f["severity"] in ("error", "warning")] == []
    assert {w["name"]: w["got_grad"] for w in report["watched"]}["alpha"] is True  # False on any rank wins
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["processes"] == 2 and len(summary["removed_edges"]) == 4
    assert all(norm > 0 for norms in summary["alpha_grad_norms"] for norm in norms)  # nodes 0-1 and 2-3


@pytest.mark.usefixtures("one_torch_thread")
def test_baselines_receive_only_what_their_fixed_weights_use():
    from reference.data import synthetic

    data = synthetic(4, clusters=2, train=16, val=8, test=16, seed=3)
    row = 62006 * 4
    for algo, rows in (("local", 0), ("oracle", 4), ("uniform", 12)):
        result = run_l2c(L2CConfig(nodes=4, rounds=1, local_epochs=1, algo=algo, device="cpu"), data)
        assert result.bytes_per_round()["one_node_per_machine"] == {"first_round": rows * row, "last_round": rows * row}
