"""Inline suppressions: a code, a kind, or a bare ignore silences the finding on its line; one that silences
nothing becomes an unused_suppression note."""
import pytest

from gradcheck_l2c.judge.suppressions import suppressions_in
from gradcheck_l2c.records import fails

BUG = """
import torch
w = torch.ones(3, requires_grad=True)
v = torch.ones(3, requires_grad=True)
opt = torch.optim.SGD([w, v], lr=0.1)
s = w.sum().item()  {comment}
loss = (v * s).sum()  {other}
loss.backward()
"""


def run(snippet, comment="", other=""):
    script = snippet(BUG.format(comment=comment, other=other))
    findings = script.run().findings
    return findings, [f for f in findings if f.kind == "item"], [f for f in findings if f.kind == "unused_suppression"]


def test_without_comment_the_item_cut_fails(snippet, one_torch_thread):
    findings, (item,), notes = run(snippet)
    assert item.line == 6 and not item.suppressed and not notes
    assert fails(findings, "error")


@pytest.mark.parametrize("comment", ["# gradcheck: ignore[GC001]", "# gradcheck: ignore[item]",
                                     "# gradcheck: ignore", "#gradcheck:ignore[gc001, GC004]  (logging)"])
def test_code_kind_or_bare_ignore_suppresses_the_finding_on_its_line(snippet, one_torch_thread, comment):
    findings, (item,), notes = run(snippet, comment)
    assert item.suppressed and item.line == 6
    assert not fails(findings, "error")
    if "GC004" in comment:  # the code that matched nothing is reported
        (note,) = notes
        assert (note.line, note.severity) == (6, "info")
        assert "GC004 (no GC004 detach finding on this line)" in note.message
    else:
        assert not notes


def test_another_code_does_not_suppress_and_is_reported_unused(snippet, one_torch_thread):
    findings, (item,), (note,) = run(snippet, "# gradcheck: ignore[GC006]")
    assert not item.suppressed and fails(findings, "error")
    assert (note.kind, note.severity, note.line, note.tensor) == ("unused_suppression", "info", 6, "")
    assert note.column == 21 and note.code.endswith("# gradcheck: ignore[GC006]")
    assert not fails([note], "error")


def test_a_suppression_on_a_line_without_finding_is_a_note(snippet, one_torch_thread):
    _, (item,), (note,) = run(snippet, other="# gradcheck: ignore")
    assert not item.suppressed
    assert note.line == 7 and "silenced no finding during this run" in note.message


def test_an_unknown_code_is_named_as_such(snippet, one_torch_thread):
    _, (item,), (note,) = run(snippet, "# gradcheck: ignore[GC999]")
    assert not item.suppressed and "GC999 (not a gradcheck-l2c code or kind)" in note.message


def test_only_real_comments_count_not_text_in_strings(tmp_path):
    path = tmp_path / "s.py"
    path.write_text('x = "# gradcheck: ignore"\ny = 1  # gradcheck: ignore[GC002]\n')
    (comment,) = suppressions_in(str(path))
    assert (comment.line, comment.names) == (2, ("GC002",))
