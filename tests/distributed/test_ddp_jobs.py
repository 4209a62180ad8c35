"""Real two-rank DDP jobs on CPU (gloo): silence and identical results when training is right, the
unused and cut layers named with their lines on every rank, one merged report, the failing rank's exit
status, and no hang. Each job ends within ddp_jobs.TIMEOUT or the test fails."""
from __future__ import annotations

import json

import pytest
import torch

from ddp_jobs import SCRIPT, line, run_job, torchrun, traced


def folders(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    work.mkdir()
    out.mkdir()
    return work, out


def state(out, rank):
    return torch.load(out / f"rank{rank}.pt")


def test_a_correct_ddp_job_is_silent_and_trains_bitwise_as_untraced(tmp_path):
    work, out = folders(tmp_path)
    plain_out = tmp_path / "plain"
    plain_out.mkdir()
    plain = run_job(torchrun(str(SCRIPT), "correct", str(plain_out)), work)
    assert plain.status == 0, plain.stderr[-2000:]
    job = run_job(traced(str(SCRIPT), "correct", str(out)), work)
    assert job.status == 0, job.stderr[-2000:]
    assert "report merged from 2 ranks (0, 1)" in job.stderr
    assert "all 8 watched tensors got a gradient; no findings" in job.stderr
    assert "error" not in job.stderr and "warning" not in job.stderr
    for rank in (0, 1):
        traced_state, plain_state = state(out, rank), state(plain_out, rank)
        assert traced_state.keys() == plain_state.keys()
        assert all(torch.equal(traced_state[k], plain_state[k]) for k in plain_state)
    assert list(work.iterdir()) == []


def test_unused_and_cut_layers_are_named_with_lines_in_one_merged_json(tmp_path):
    work, out = folders(tmp_path)
    job = run_job(traced("--json", "report.json", str(SCRIPT), "broken", str(out)), work)
    assert job.status == 1  # the ranks raise DDP's error: the job fails with their status
    assert [p.name for p in work.iterdir()] == ["report.json"]
    document = json.loads((work / "report.json").read_text())
    found = {(f["kind"], f["tensor"], f["line"], tuple(f["ranks"])) for f in document["findings"]}
    assert {kind for kind, *_ in found} == {"ddp_unused", "detach"}  # no blame for DDP(...) or model.to()
    both = (0, 1)
    assert ("ddp_unused", "model.aux.weight", line("aux"), both) in found
    assert ("ddp_unused", "model.mid.weight", line("mid"), both) in found
    assert ("detach", "model.mid.weight", line("cut"), both) in found
    by_tensor = {f["tensor"]: f for f in document["findings"] if f["kind"] == "ddp_unused"}
    assert "never called" in by_tensor["model.aux.weight"]["message"]
    assert {(r["role"], r["line"]) for r in by_tensor["model.mid.bias"]["related"]} >= {("used", line("cut"))}
    assert {(r["role"], r["line"]) for r in by_tensor["model.aux.bias"]["related"]} == {("symptom", line("loss"))}
    assert job.stderr.count("ddp_unused [ranks 0, 1]: model.aux.weight, model.aux.bias") == 1
    assert "the parameters DDP waited for" in job.stderr  # added to DDP's own error on each rank


def test_the_failing_rank_s_exit_status_ends_the_job(tmp_path):
    work, out = folders(tmp_path)
    job = run_job(traced(str(SCRIPT), "exit", str(out)), work)
    assert job.status == 3, job.stderr[-2000:]
    assert "rank 1 failed first (exit status 3)" in job.stderr


def test_a_killed_rank_leaves_no_one_waiting(tmp_path):
    work, out = folders(tmp_path)
    job = run_job(traced(str(SCRIPT), "kill", str(out)), work)
    assert job.status == 128 + 9, job.stderr[-2000:]
    assert "rank 1 failed first (exit status 137)" in job.stderr
    assert "ended without a report" in job.stderr


def test_under_plain_torchrun_rank_0_prints_the_merged_report(tmp_path):
    work, out = folders(tmp_path)
    job = run_job(torchrun("-m", "gradcheck_l2c", "trace", "--json", "report.json", str(SCRIPT), "find_unused",
                           str(out)), work)
    assert job.status == 0, job.stderr[-2000:]  # warnings do not fail the job
    assert job.stderr.count("report merged from 2 ranks (0, 1)") == 1
    assert "warning: ddp_unused [ranks 0, 1]: model.aux.weight, model.aux.bias" in job.stderr
    assert [p.name for p in work.iterdir()] == ["report.json"]
    document = json.loads((work / "report.json").read_text())
    assert {(f["tensor"], f["line"], tuple(f["ranks"])) for f in document["findings"]} == {
        ("model.aux.weight", line("aux"), (0, 1)), ("model.aux.bias", line("aux"), (0, 1))}


@pytest.mark.skipif(torch.cuda.device_count() < 2 or not torch.distributed.is_nccl_available(),
                    reason="needs two CUDA devices and NCCL")
def test_on_two_gpus_with_nccl(tmp_path):
    work, out = folders(tmp_path)
    plain_out = tmp_path / "plain"
    plain_out.mkdir()
    assert run_job(torchrun(str(SCRIPT), "correct", str(plain_out)), work, DDP_TEST_DEVICE="cuda").status == 0
    job = run_job(traced(str(SCRIPT), "correct", str(out)), work, DDP_TEST_DEVICE="cuda")
    assert job.status == 0 and "no findings" in job.stderr, job.stderr[-2000:]
    for rank in (0, 1):
        traced_state, plain_state = state(out, rank), state(plain_out, rank)
        assert all(torch.equal(traced_state[k], plain_state[k]) for k in plain_state)
    broken = run_job(traced("--json", "report.json", str(SCRIPT), "broken", str(out)), work,
                     DDP_TEST_DEVICE="cuda")
    document = json.loads((work / "report.json").read_text())
    found = {(f["kind"], f["tensor"], f["line"]) for f in document["findings"]}
    assert broken.status == 1
    assert {("ddp_unused", "model.aux.weight", line("aux")), ("ddp_unused", "model.mid.weight", line("mid"))} <= found
