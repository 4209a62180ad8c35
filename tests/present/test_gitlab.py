"""GitLab's code quality report from hand-made findings: severities, paths, unique fingerprints."""
import dataclasses

from gradcheck_l2c.present.gitlab import codequality_document
from gradcheck_l2c.records import Finding


def finding(**changes):
    base = Finding("item", "error", "Net.alpha", "/repo/sub dir/train.py", 30, "x = w.item()",
                   "`.item()` turned a value computed from Net.alpha into a Python number.", "drop .item().", 4)
    return dataclasses.replace(base, **changes)


def test_one_issue_per_finding_with_code_severity_and_path_in_the_repository():
    (issue,) = codequality_document([finding()], root="/repo")
    assert issue["check_name"] == "GC001" and issue["severity"] == "major"
    assert issue["description"] == ("Net.alpha: `.item()` turned a value computed from Net.alpha into a Python "
                                    "number. Fix: drop .item().")
    assert issue["location"] == {"path": "sub dir/train.py", "lines": {"begin": 30}}
    assert len(issue["fingerprint"]) == 32


def test_suppressed_and_placeless_findings_are_left_out_and_levels_map():
    issues = codequality_document([finding(suppressed=True), finding(file="<unknown>", line=0),
                                   finding(severity="warning"), finding(severity="info", tensor="", kind="detach")],
                                  root=None)
    assert [issue["severity"] for issue in issues] == ["minor", "info"]
    assert issues[0]["location"]["path"] == "/repo/sub dir/train.py"  # outside the repository: absolute


def test_fingerprints_are_unique_in_a_report_and_stable_across_line_moves():
    first = codequality_document([finding(), finding(line=40), finding(file="/repo/other.py")], root="/repo")
    assert len({issue["fingerprint"] for issue in first}) == 3
    moved = codequality_document([finding(line=90)], root="/repo")
    assert moved[0]["fingerprint"] == first[0]["fingerprint"]
