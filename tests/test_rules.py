"""Every kind has a permanent rule code, listed in the README and by `gradcheck-l2c rules`."""
import re
from pathlib import Path

from gradcheck_l2c.cli import main
from gradcheck_l2c.judge.detectors import CUTS, SCANNERS
from gradcheck_l2c.rules import CAUSES, KINDS, RULES, code_of, label_of, lookup, rule_for

README = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def test_every_detector_has_a_rule_row():
    detectors = {module.KIND for module in (*CUTS.values(), *SCANNERS)}
    assert detectors - set(KINDS) == set(), "add a Rule line in gradcheck_l2c/rules.py for each new kind"
    assert set(KINDS) - detectors == {"unused_suppression"}  # the suppressions pass reports it


def test_cut_detectors_report_at_their_rows_level_and_explain_missing_gradients():
    """A cut detector's findings take its row's first level; every cut explains a missing gradient."""
    assert all(not hasattr(module, "SEVERITY") for module in CUTS.values())
    assert {kind for kind in CUTS if rule_for(kind).level == "error"} == set(CUTS)
    assert set(CUTS) <= CAUSES


def test_graph_labels_come_from_the_table():
    assert label_of("item") == ".item()" and label_of("inplace_saved") == "in-place on a saved tensor"
    assert label_of("a_kind_without_rule") == "a_kind_without_rule"


def test_codes_are_unique_well_formed_and_levels_known():
    codes = [rule.code for rule in RULES]
    assert len(set(codes)) == len(codes)
    assert all(re.fullmatch(r"GC\d{3}", code) for code in codes)
    assert all(rule.levels and set(rule.levels) <= {"error", "warning", "info"} for rule in RULES)
    assert all(len(set(rule.levels)) == len(rule.levels) for rule in RULES)
    assert all(rule.description.endswith(".") and rule.fix.endswith(".") for rule in RULES)


def test_released_codes_keep_their_meaning():
    assert [(rule.code, rule.kind) for rule in RULES[:16]] == [
        ("GC001", "item"), ("GC002", "numpy"), ("GC003", "tensor_rewrap"), ("GC004", "detach"),
        ("GC005", "data_attr"), ("GC006", "no_grad"), ("GC007", "state_dict_reload"),
        ("GC008", "new_parameter"), ("GC009", "non_parameter_tensor"), ("GC010", "unused_parameter"),
        ("GC011", "module_in_forward"), ("GC012", "non_leaf_watched"), ("GC013", "non_differentiable"),
        ("GC014", "inplace_saved"), ("GC015", "state_dict_alias"), ("GC016", "optimizer")]
    assert rule_for("unused_suppression").code == "GC900"


def test_lookup_by_code_in_any_case_or_by_kind():
    assert lookup("GC001") is lookup("gc001") is lookup("item") is rule_for("item")
    assert lookup("GC999") is None and lookup("Item") is None
    assert code_of("a_kind_without_rule") == "a_kind_without_rule"


def test_readme_kinds_table_lists_every_code_in_order():
    rows = re.findall(r"^\| (GC\d{3}) \| `(\w+)` \|", README.read_text(encoding="utf-8"), re.MULTILINE)
    assert rows == [(rule.code, rule.kind) for rule in RULES]


def test_rules_command_prints_code_kind_description_and_fix(capsys):
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 3 * len(RULES)
    assert lines[0] == "GC001 item (error)"
    assert lines[1] == f"    {rule_for('item').description}"
    assert lines[2] == f"    fix: {rule_for('item').fix}"
    assert "GC900 unused_suppression (info)" in lines
    assert "GC014 inplace_saved (error, info)" in lines  # every level it is reported at, the usual first
