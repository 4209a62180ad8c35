"""Every kind has a permanent rule code, listed in the README and by `gradcheck-l2c rules`."""
import re
from pathlib import Path

from gradcheck_l2c.cli import main
from gradcheck_l2c.records import KINDS
from gradcheck_l2c.rules import RULES, code_of, lookup, missing_rules, rule_for

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_kind_has_a_rule_and_every_rule_a_kind():
    assert missing_rules() == [], "add a Rule line in gradcheck_l2c/rules.py for each new kind"
    assert [rule.kind for rule in RULES] == list(KINDS)


def test_codes_are_unique_well_formed_and_levels_known():
    codes = [rule.code for rule in RULES]
    assert len(set(codes)) == len(codes)
    assert all(re.fullmatch(r"GC\d{3}", code) for code in codes)
    assert all(rule.level in ("error", "warning", "info") for rule in RULES)
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
