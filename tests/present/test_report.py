"""The text report and the JSON document, built from hand-made findings."""
import dataclasses
import json
import os

import pytest

from gradcheck_l2c.present.jsonreport import JSON_VERSION, json_document
from gradcheck_l2c.present.textreport import format_report, summary_line
from gradcheck_l2c.records import Finding, Related, WatchedTensor

HERE = os.path.abspath("train.py")


def finding(kind="item", severity="error", tensor="Net.alpha", line=10, count=1, code="y = w.item()",
            message="`.item()` turned a value computed from Net.alpha into a Python float.",
            fix="keep it a tensor: drop `.item()`.", file=HERE):
    return Finding(kind, severity, tensor, file, line, code, message, fix, count)


ALPHA = WatchedTensor("Net.alpha", (4, 4), False)
WEIGHT = WatchedTensor("Net.fc.weight", (2, 3), True)
BIAS = WatchedTensor("Net.fc.bias", (2,), None)


def test_summary_names_the_tensors_without_gradient_and_counts_by_severity():
    findings = [finding(), finding(kind="no_grad", line=12), finding(kind="optimizer", severity="warning"),
                finding(kind="non_leaf_watched", severity="info")]
    line = summary_line(findings, [ALPHA, WEIGHT, BIAS])
    assert line == ("gradcheck-l2c: 1 of 3 watched tensors got no gradient (Net.alpha), "
                    "1 never reached by a backward; 2 errors, 1 warning, 1 note")


@pytest.mark.parametrize(
    ("watched", "expected"),
    [
        ([], "gradcheck-l2c: no tensor was watched; no findings"),
        ([WEIGHT], "gradcheck-l2c: the watched tensor got a gradient; no findings"),
        ([WEIGHT, WEIGHT], "gradcheck-l2c: all 2 watched tensors got a gradient; no findings"),
        ([BIAS, BIAS], "gradcheck-l2c: no backward reached the 2 watched tensors; no findings"),
    ],
)
def test_summary_without_findings(watched, expected):
    assert summary_line([], watched) == expected


def test_summary_lists_at_most_three_names():
    watched = [WatchedTensor(f"t{i}", (1,), False) for i in range(5)]
    assert "(t0, t1, t2 and 2 more)" in summary_line([], watched)


def test_causes_of_a_missing_gradient_come_in_flow_order_with_place_code_and_fix():
    first = finding(kind="item", line=30, count=120, code="x = w[i].item() * d")
    second = finding(kind="state_dict_reload", line=12, code="model.load_state_dict(theta)",
                     message="load_state_dict copied plain values over the parameters.",
                     fix="use torch.func.functional_call.")
    lines = format_report([first, second], [ALPHA]).splitlines()

    assert lines[2] == "Net.alpha (4, 4) got no gradient; causes in the order the values flowed:"
    assert lines[4:8] == [
        "  1. train.py:30: error: item (×120)",
        "         x = w[i].item() * d",
        "     `.item()` turned a value computed from Net.alpha into a Python float.",
        "     fix: keep it a tensor: drop `.item()`.",
    ]
    assert lines[9] == "  2. train.py:12: error: state_dict_reload"
    assert lines[10:] == ["         model.load_state_dict(theta)",
                          "     load_state_dict copied plain values over the parameters.",
                          "     fix: use torch.func.functional_call."]


def test_tensors_with_the_same_causes_share_one_section():
    """The layers of one module behind one `.detach()`: one section naming them all, each cause once,
    its counts ranging over the tensors; a tensor with other causes keeps its own section."""
    names = [f"G.{i}.weight" for i in range(6)]
    watched = [WatchedTensor(name, (2, 2), False) for name in names] + [ALPHA]
    cuts = [finding(kind="detach", line=31, tensor=name, count=3 if name == "G.1.weight" else 1) for name in names]
    lines = format_report([*cuts, finding(kind="item", line=30)], watched).splitlines()

    headers = [line for line in lines if "got no gradient; causes" in line]
    assert headers == [
        "G.0.weight (2, 2), G.1.weight (2, 2), G.2.weight (2, 2), G.3.weight (2, 2) and 2 more got no gradient; "
        "causes in the order the values flowed:",
        "Net.alpha (4, 4) got no gradient; causes in the order the values flowed:",
    ]
    assert [line for line in lines if "train.py:31" in line] == ["  1. train.py:31: error: detach (×1 to ×3)"]


def test_missing_gradients_without_a_finding_are_listed_together():
    watched = [WatchedTensor(f"Net.layer{i}.weight", (2, 2), False) for i in range(12)]
    lines = format_report([], watched).splitlines()
    assert lines[2] == "Got no gradient, and no finding explains why (does the loss use them?):"
    assert lines[3].startswith("  Net.layer0.weight (2, 2), Net.layer1.weight (2, 2), ")
    assert lines[3].endswith("Net.layer9.weight (2, 2) and 2 more")
    assert format_report([], watched, verbose=True).splitlines()[3].endswith("Net.layer11.weight (2, 2)")


def test_other_findings_fold_the_same_event_on_several_tensors_and_put_errors_first():
    findings = [
        finding(kind="optimizer", severity="warning", tensor="Net.w", line=5),
        finding(kind="state_dict_reload", tensor="Net.fc.weight", line=40, count=3),
        finding(kind="state_dict_reload", tensor="Net.fc.bias", line=40, count=3),
    ]
    lines = format_report(findings, [WEIGHT]).splitlines()
    heads = [line for line in lines if line.startswith("  - ")]
    assert lines[2] == "Findings:"
    assert heads == ["  - train.py:40: error: state_dict_reload (×3): Net.fc.weight, Net.fc.bias",
                     "  - train.py:5: warning: optimizer: Net.w"]


def test_findings_about_other_tensors_come_after_the_missing_ones():
    findings = [finding(kind="optimizer", severity="warning", tensor="Net.w", line=5), finding()]
    report = format_report(findings, [ALPHA, WEIGHT])
    assert report.index("Net.alpha (4, 4) got no gradient") < report.index("Other findings:")
    assert report.index("Other findings:") < report.index("train.py:5: warning: optimizer: Net.w")


def test_max_findings_caps_the_entries_and_says_how_many_are_left_out():
    findings = [finding(line=line) for line in range(1, 6)]
    report = format_report(findings, [ALPHA], max_findings=2)
    assert "train.py:2:" in report and "train.py:3:" not in report
    assert "3 more findings not shown (at most 2 entries are listed)." in report


def test_max_findings_zero_lists_no_entry_and_no_empty_heading():
    findings = [finding(line=1), finding(kind="optimizer", severity="warning", tensor="Net.w", line=5)]
    report = format_report(findings, [ALPHA, WEIGHT], max_findings=0)
    assert report.splitlines()[0].startswith("gradcheck-l2c: 1 of 2 watched tensors got no gradient")
    assert "got no gradient; causes" not in report and "Other findings" not in report
    assert report.endswith("\n\n2 findings not shown (at most 0 entries are listed).\n")


def test_one_line_cut_a_different_number_of_times_per_tensor_shows_each_count():
    findings = [finding(kind="state_dict_reload", tensor="Net.fc.weight", line=40, count=60),
                finding(kind="state_dict_reload", tensor="Net.fc.bias", line=40, count=66)]
    heads = [line for line in format_report(findings, [WEIGHT]).splitlines() if line.startswith("  - ")]
    assert heads == ["  - train.py:40: error: state_dict_reload (×60 Net.fc.weight, ×66 Net.fc.bias): "
                     "Net.fc.weight, Net.fc.bias"]


def test_notes_are_hidden_unless_verbose():
    note = finding(kind="non_leaf_watched", severity="info", tensor="h", line=7)
    quiet = format_report([note], [WEIGHT, BIAS])
    assert "train.py:7" not in quiet
    assert "1 note not shown (verbose shows them)." in quiet

    verbose = format_report([note], [WEIGHT, BIAS], verbose=True)
    assert "  - train.py:7: info: non_leaf_watched: h" in verbose
    assert "Got a gradient: Net.fc.weight" in verbose
    assert "Never reached by a backward: Net.fc.bias" in verbose


def test_files_outside_the_current_folder_keep_their_absolute_path():
    outside = os.path.join(os.path.dirname(os.getcwd()), "elsewhere.py")
    assert f"  1. {outside}:10: error: item" in format_report([finding(file=outside)], [ALPHA])


def test_colour_only_when_asked():
    plain = format_report([finding()], [ALPHA])
    coloured = format_report([finding()], [ALPHA], color=True)
    assert "\x1b[" not in plain
    assert "\x1b[1;31merror\x1b[0m" in coloured
    assert coloured.replace("\x1b[1;31m", "").replace("\x1b[1m", "").replace("\x1b[32m", "").replace(
        "\x1b[0m", "") == plain


def test_json_document_holds_every_field():
    findings = [finding(count=4)]
    document = json_document(script=HERE, argv=[HERE, "--lr", "3"], exit_code=1,
                             watched=[ALPHA, WEIGHT], findings=findings)
    assert json.loads(json.dumps(document)) == {
        "version": JSON_VERSION,
        "script": HERE,
        "argv": [HERE, "--lr", "3"],
        "exit_code": 1,
        "watched": [{"name": "Net.alpha", "got_grad": False, "shape": [4, 4]},
                    {"name": "Net.fc.weight", "got_grad": True, "shape": [2, 3]}],
        "findings": [{"kind": "item", "severity": "error", "tensor": "Net.alpha", "file": HERE, "line": 10,
                      "code": "y = w.item()", "message": findings[0].message, "fix": findings[0].fix,
                      "count": 4, "related": [], "column": None, "suppressed": False,
                      "fix_diff": "", "verified": "", "verify_note": ""}],
    }


def test_related_places_are_listed_under_the_finding_and_in_json():
    snapshot = Finding("state_dict_alias", "warning", "Net.alpha", HERE, 7, "sd = net.state_dict()",
                       "the snapshot shares storage with the live weights.", "take real copies.", 1,
                       (Related(HERE, 12, "symptom", "net.load_state_dict(sd)"),))
    text = format_report([snapshot], [ALPHA], color=False)
    assert "train.py:7: warning: state_dict_alias" in text
    assert "symptom: train.py:12: net.load_state_dict(sd)" in text
    document = json_document(script=HERE, argv=[HERE], exit_code=0, watched=[ALPHA], findings=[snapshot])
    assert document["findings"][0]["related"] == [{"file": HERE, "line": 12, "role": "symptom"}]


def test_suppressed_findings_are_counted_not_listed_and_their_tensor_is_not_unexplained():
    silenced = dataclasses.replace(finding(), suppressed=True)
    side = dataclasses.replace(finding(kind="optimizer", severity="warning", line=3), suppressed=True)
    assert summary_line([silenced, side], [ALPHA]) == (
        "gradcheck-l2c: 1 of 1 watched tensor got no gradient (Net.alpha); no findings, 2 suppressed")
    report = format_report([silenced, side, finding(kind="no_grad", line=12)], [ALPHA])
    assert "; 1 error, 2 suppressed" in report.splitlines()[0]
    assert "train.py:10" not in report and "train.py:3" not in report
    assert "  1. train.py:12: error: no_grad" in report
    assert "no finding explains why" not in format_report([silenced], [ALPHA])


def test_the_diff_and_the_verdict_are_shown_under_the_finding():
    diff = "--- a/train.py\n+++ b/train.py\n@@ -10 +10 @@\n-y = w.item()\n+y = w\n"
    fixed = dataclasses.replace(finding(), fix_diff=diff, verified="not enough",
                                verify_note="Net.alpha still gets no gradient: train.py:12 (no_grad) cuts the same path")
    text = format_report([fixed], [ALPHA], color=False)
    assert ("     patch:\n         @@ -10 +10 @@\n         -y = w.item()\n         +y = w\n"
            "     not enough: Net.alpha still gets no gradient: train.py:12 (no_grad) cuts the same path\n") in text
    assert "+++ b/train.py" not in text  # the entry names the file already
