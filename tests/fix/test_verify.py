"""``fix --verify`` reruns the patched copy and says, per finding, verified / not enough / not checked: on the
seed question (the ``.item()`` alone is not enough, with ``load_state_dict`` it is verified and alpha learns) and
on cases of tests/cases whose kinds have mechanical fixes; the HTML report of ``fix --verify --html`` shows both."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_pre_hook

from gradcheck_l2c.fixcommand import run_fix
from gradcheck_l2c.runner import ScriptRunner

ROOT = Path(__file__).resolve().parents[2]
CASES = ROOT / "tests" / "cases"


def fixed(script: Path, **options):
    """``run_fix`` on a script with verification, quiet; the findings by (kind, line), and the result."""
    runner = ScriptRunner(str(script))
    runner.prepare()
    with contextlib.redirect_stderr(io.StringIO()):
        result = run_fix(runner, verify=True, **options)
    by_place = {}
    for finding in result.findings:
        by_place.setdefault((finding.kind, finding.line), finding)
    return by_place, result


def test_seed_item_alone_is_not_enough_and_with_load_state_dict_alpha_learns(one_torch_thread):
    pytest.importorskip("tqdm")
    alpha_grads = []

    def record(optimizer, *_):  # the L2C step: Adam over alpha alone
        if isinstance(optimizer, torch.optim.Adam) and optimizer.param_groups[0]["params"][0].grad is not None:
            alpha_grads.append(optimizer.param_groups[0]["params"][0].grad.abs().sum().item())

    handle = register_optimizer_step_pre_hook(record)
    try:
        found, result = fixed(ROOT / "reference" / "seed_l2c.py", watch=["alpha"])
    finally:
        handle.remove()
    item, reload = found[("item", 188)], found[("state_dict_reload", 192)]
    assert "-                        theta_next[name] -= model.w[i][j].item() * " in item.fix_diff
    assert "+                    outputs = torch.func.functional_call(model, theta_next, (inputs,))" in reload.fix_diff
    assert item.verified == "not enough"
    assert "seed_l2c.py:192 (state_dict_reload) cuts the same path" in item.verify_note
    assert reload.verified == "verified" and "CNNCifar.alpha gets a gradient" in reload.verify_note
    assert "together with the fix at seed_l2c.py:188" in reload.verify_note
    assert item.key() in result.fixed  # not enough alone, verified together
    assert alpha_grads and max(alpha_grads) > 0  # the copy with both fixes: alpha's gradient is not zero


@pytest.mark.parametrize(("case", "kind", "line", "status"), [
    ("f1_detach_backward_raises", "detach", 10, "verified"),
    ("b5_d2l_custom_layer_data", "data_attr", 16, "verified"),
    ("f2_non_leaf_to_double", "non_leaf_watched", 6, "verified"),
    ("b4_layers_in_python_list", "non_parameter_tensor", 11, "verified"),
    ("f2_optimizer_param_added_late", "optimizer", 17, "verified"),
    ("f2_state_dict_copy_shallow", "state_dict_alias", 9, "verified"),
    ("b4_maml_load_state_dict", "state_dict_reload", 21, "verified"),
    # No backward ever runs: the fixes connect the graph, and still nothing gives b a gradient.
    ("f7_name_plain_variable", "item", 7, "not enough"),
])
def test_case_fix_verdict(case, kind, line, status, one_torch_thread):
    found, _ = fixed(CASES / case / "bug.py")
    assert found[(kind, line)].fix_diff
    assert found[(kind, line)].verified == status, found[(kind, line)].verify_note


def test_fixes_on_one_path_are_verified_together(one_torch_thread):
    found, result = fixed(CASES / "f4_item_add" / "bug.py")
    item, rewrap = found[("item", 12)], found[("tensor_rewrap", 13)]
    assert item.verified == "not enough" and "bug.py:13 (tensor_rewrap) cuts the same path" in item.verify_note
    assert rewrap.verified == "verified" and "together with the fix at bug.py:12" in rewrap.verify_note
    assert {item.key(), rewrap.key()} <= result.fixed


def test_a_cut_only_the_rerun_shows_is_fixed_too(one_torch_thread):
    found, _ = fixed(CASES / "f4_float_loss_rewrap" / "bug.py")
    rewrap = found[("tensor_rewrap", 11)]  # the first trace reports only the float() on line 10
    assert rewrap.verified == "verified" and rewrap.verify_note.startswith("found by the rerun")
    assert "+    loss = value\n" in rewrap.fix_diff


def test_a_run_stopped_by_its_step_limit_is_not_checked(one_torch_thread):
    found, _ = fixed(CASES / "f1_detach_backward_raises" / "bug.py", max_steps=0)
    assert found[("detach", 10)].verified == "not checked"
    assert "0 optimizer steps" in found[("detach", 10)].verify_note


def test_with_verify_the_printed_diff_holds_only_the_fixes_that_work(tmp_path, monkeypatch, capsys):
    from gradcheck_l2c.cli import main

    (tmp_path / "train.py").write_text(
        "import torch\n"
        "w = torch.ones(3, requires_grad=True)\n"
        "b = torch.zeros(3, requires_grad=True)\n"
        "loss = w.sum().detach() * 2\n"
        "loss.requires_grad_()\n"
        "loss.backward()\n"
        "shift = b.sum().item()  # no backward ever reaches b: dropping .item() cannot help\n"
        "print(w.grad, b.grad, torch.tensor(shift) * 2)\n")  # the number comes back into torch: a use, not a log
    monkeypatch.chdir(tmp_path)
    assert main(["fix", "--verify", "--html", "report", "train.py"]) == 1  # the error on b has no working fix
    out = capsys.readouterr()
    assert "+loss = w.sum() * 2\n" in out.out and "-shift" not in out.out
    assert "verified: w gets a gradient" in out.err and "not enough: b still gets no gradient" in out.err
    assert "+shift = b.sum()  # no backward" in out.err  # the report still shows the fix that did not work
    page = next((tmp_path / "report").glob("source-*.html")).read_text()  # the HTML report: both, beside the lines
    assert '<div class="verdict verified"><b>verified</b> w gets a gradient</div>' in page
    assert '<div class="verdict not-enough"><b>not enough</b> b still gets no gradient' in page
    assert '<span class="add">+loss = w.sum() * 2</span>' in page and '<span class="add">+shift = b.sum()' in page
