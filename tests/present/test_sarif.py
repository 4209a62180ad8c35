"""The SARIF document from hand-made findings: related places, suppressions, fingerprints, URIs."""
import dataclasses
import os

from gradcheck_l2c.present.repository import fingerprint, relative_path, repository_root
from gradcheck_l2c.present.sarifreport import FINGERPRINT_KEY, sarif_document
from gradcheck_l2c.records import Finding, Related
from gradcheck_l2c.rules import RULES


def finding(**changes):
    base = Finding("state_dict_reload", "error", "Net.alpha", "/repo/train.py", 30, "model.load_state_dict(theta)",
                   "load_state_dict() copied values computed from Net.alpha.", "use functional_call.", 4,
                   column=5)
    return dataclasses.replace(base, **changes)


def results(*findings, root="/repo"):
    return sarif_document(findings, version="1.2.3", root=root, exit_code=1)["runs"][0]["results"]


def test_result_has_rule_level_location_and_fix(sarif_errors):
    document = sarif_document([finding()], version="1.2.3", root="/repo", exit_code=1)
    assert sarif_errors(document) == []
    (result,) = document["runs"][0]["results"]
    assert result["ruleId"] == "GC007" and RULES[result["ruleIndex"]].kind == "state_dict_reload"
    assert result["level"] == "error"
    assert result["message"]["text"] == ("Net.alpha: load_state_dict() copied values computed from Net.alpha. "
                                         "Fix: use functional_call.")
    assert result["locations"] == [{"physicalLocation": {
        "artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 30, "startColumn": 5, "snippet": {"text": "model.load_state_dict(theta)"}}}}]
    assert "suppressions" not in result
    assert document["runs"][0]["invocations"] == [{"executionSuccessful": True, "exitCode": 1}]


def test_related_places_become_related_locations_linked_from_the_message(sarif_errors):
    places = (Related("/repo/train.py", 41, "symptom", "print(alpha.grad)"), Related("/lib/[m].py", 7, "defined"))
    document = sarif_document([finding(related=places)], version="1", root="/repo")
    assert sarif_errors(document) == []
    (result,) = document["runs"][0]["results"]
    assert " See [where the symptom showed (train.py:41)](1), [where it was defined (\\[m\\].py:7)](2)." in (
        result["message"]["text"])
    assert result["relatedLocations"] == [
        {"id": 1, "message": {"text": "where the symptom showed"}, "physicalLocation": {
            "artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": 41, "snippet": {"text": "print(alpha.grad)"}}}},
        {"id": 2, "message": {"text": "where it was defined"}, "physicalLocation": {
            "artifactLocation": {"uri": "file:///lib/%5Bm%5D.py"}, "region": {"startLine": 7}}},
    ]


def test_suppressed_findings_stay_with_an_in_source_suppression(sarif_errors):
    document = sarif_document([finding(suppressed=True)], version="1", root=None)
    assert sarif_errors(document) == []
    (result,) = document["runs"][0]["results"]
    assert [entry["kind"] for entry in result["suppressions"]] == ["inSource"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {"uri": "file:///repo/train.py"}
    assert "originalUriBaseIds" not in document["runs"][0]


def test_fingerprint_ignores_the_line_and_spacing_but_not_the_kind_tensor_or_code():
    moved = finding(line=90, code="model.load_state_dict( theta )", column=9)
    assert fingerprint(moved) == fingerprint(finding())
    assert results(moved)[0]["partialFingerprints"] == {FINGERPRINT_KEY: fingerprint(finding())}
    assert len({fingerprint(finding()), fingerprint(finding(tensor="Net.w")), fingerprint(finding(kind="detach")),
                fingerprint(finding(code="model.load_state_dict(other)"))}) == 4


def test_unknown_places_have_no_location_and_notes_are_notes(sarif_errors):
    document = sarif_document([finding(file="<unknown>", line=0, severity="info", column=None)], version="1",
                              root="/repo")
    assert sarif_errors(document) == []
    (result,) = document["runs"][0]["results"]
    assert "locations" not in result and result["level"] == "note"


def test_every_rule_is_described(sarif_errors):
    rules = sarif_document([], version="1", root=None)["runs"][0]["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [rule.code for rule in RULES]
    assert all(rule["shortDescription"]["text"] and rule["help"]["text"] for rule in rules)


def test_repository_root_is_the_nearest_folder_with_git(tmp_path):
    (tmp_path / "repo" / "a" / "b").mkdir(parents=True)
    (tmp_path / "repo" / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    assert repository_root(str(tmp_path / "repo" / "a" / "b")) == str(tmp_path / "repo")
    assert repository_root(os.path.abspath(os.sep)) in (None, os.path.abspath(os.sep))
    assert relative_path(str(tmp_path / "repo" / "a" / "x y.py"), str(tmp_path / "repo")) == "a/x y.py"
    assert relative_path(str(tmp_path / "x.py"), str(tmp_path / "repo")) is None
    assert relative_path(str(tmp_path / "x.py"), None) is None


DIFF = """--- a/train.py
+++ b/train.py
@@ -29,3 +29,3 @@
 theta = step(theta)
-model.load_state_dict(theta)
+out = functional_call(model, theta, (x,))
 loss = out.sum()
@@ -40,2 +40,3 @@
 a = 1
+b = 2
 c = 3
"""


def test_a_written_fix_becomes_sarif_fixes_replacing_whole_lines(sarif_errors):
    document = sarif_document([finding(fix_diff=DIFF)], version="1.2.3", root="/repo", exit_code=1)
    assert sarif_errors(document) == []
    (result,) = document["runs"][0]["results"]
    assert result["fixes"] == [{"description": {"text": "use functional_call."}, "artifactChanges": [{
        "artifactLocation": {"uri": "train.py", "uriBaseId": "%SRCROOT%"},
        "replacements": [
            {"deletedRegion": {"startLine": 30, "startColumn": 1, "endLine": 31, "endColumn": 1},
             "insertedContent": {"text": "out = functional_call(model, theta, (x,))\n"}},
            {"deletedRegion": {"startLine": 41, "startColumn": 1, "endLine": 41, "endColumn": 1},
             "insertedContent": {"text": "b = 2\n"}}]}]}]
    assert "fixes" not in results(finding())[0]  # `trace` writes none
