"""The HTML report's pages, read as files: what a user clicks through in a browser (tests/present/html/
test_html_browser.py clicks through it for real)."""
import re

import pytest

from gradcheck_l2c.cli import main
from gradcheck_l2c.present.draw import render
from gradcheck_l2c.present.html.gradplot import grad_stats_section
from gradcheck_l2c.present.html.report import inline_html, write_html_report
from gradcheck_l2c.records import Finding, LayerGradients, Related, WatchedTensor
from gradcheck_l2c.runner import EXIT_USAGE


def _source_page(folder):
    (page,) = folder.glob("source-*.html")
    return page


def test_index_links_every_finding_to_its_source_line(seed_report, seed_lines):
    index = (seed_report / "index.html").read_text()
    page = _source_page(seed_report)
    item_line = seed_lines["item"]
    rows = re.findall(r'<tr id="(f\d+)" data-kind="([a-z_]+)" data-severity="(\w+)">', index)
    assert ("item", "error") in {(kind, severity) for _, kind, severity in rows}
    assert f'href="{page.name}#L{item_line}"' in index
    assert '<script src' not in index and "http" not in index.split("<body>")[1]  # nothing from the network


def test_source_page_marks_the_cut_and_links_symptom_and_finding_both_ways(seed_report, seed_lines):
    page = _source_page(seed_report)
    text = page.read_text()
    item_line, symptom_line = seed_lines["item"], seed_lines["symptom"]
    assert f'<tr class="line error" id="L{item_line}">' in text
    assert f'<tr class="line related" id="L{symptom_line}">' in text
    note = re.search(r'<div class="finding error" id="(note-f\d+)"><div><span class="sev error">error</span> '
                     r'<a href="index.html#(f\d+)">GC001 item</a> ×\d+ on <code>CNNCifar.alpha</code>', text)
    assert note, "the .item() note links back to its row in the index"
    assert f'symptom: <a href="{page.name}#L{symptom_line}">' in text.split(note.group(1))[1].split("</div></div>")[0]
    assert f'href="{page.name}#{note.group(1)}">GC001 item at' in text  # the symptom's note links to the cut's note
    assert '<img src="graph-1.svg"' in text or "graph-1.dot" in text


def test_names_and_source_from_the_run_are_escaped(hostile_report):
    for page in hostile_report.glob("*.html"):
        text = page.read_text()
        assert "<img src=x" not in text and "window.pwned=2</script>" not in text
        assert text.count("<script>") == 1  # the report's own
    source = _source_page(hostile_report)
    assert re.fullmatch(r"source-1-[A-Za-z0-9_.-]+\.html", source.name)
    assert "&lt;/script&gt;&lt;script&gt;window.pwned=2" in source.read_text()


def test_without_graphviz_the_report_links_the_dot_source_and_quiet_still_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(render.shutil, "which", lambda name: None)
    script = tmp_path / "step.py"
    script.write_text("import torch\n\nw = torch.ones(2, requires_grad=True)\n"
                      "(torch.ones(2, requires_grad=True) * w.sum().item()).sum().backward()\n")
    out = tmp_path / "report"
    assert main(["trace", "-q", "--html", str(out), "--render", str(tmp_path / "graphs"), str(script)]) == 1
    index = (out / "index.html").read_text()
    assert '<a href="graph-1.dot">graph-1.dot</a>' in index and "Graphviz" in index
    assert (tmp_path / "graphs" / "graph-1.dot").is_file()
    stderr = capsys.readouterr().err
    assert stderr.count("Graphviz's `dot` program was not found") == 1
    assert "wrote the HTML report" not in stderr  # -q: the summary line and the missing-tool notice only


def test_html_and_render_into_one_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["trace", "--html", str(tmp_path), "--render", str(tmp_path), "never_run.py"]) == EXIT_USAGE
    assert "give them different folders" in capsys.readouterr().err


def test_inline_report_is_one_block_with_ids_of_its_own(tmp_path):
    script = tmp_path / "step.py"
    script.write_text("import torch\n\n\nw = torch.ones(2)\nx = w.sum().item()\n\n\n\n\n\nprint(x)\n")
    finding = Finding("item", "error", "w", str(script), 5, "x = w.sum().item()", "made a number", "keep a tensor",
                      related=(Related(str(script), 11, "symptom"),))
    block = inline_html([finding], [WatchedTensor("w", (2,), False)])
    first, second = (re.search(r'id="(gc[0-9a-f]{8}-)findings"', inline_html([finding], [])).group(1)
                     for _ in range(2))
    assert first != second
    prefix = re.search(r'id="(gc[0-9a-f]{8}-)findings"', block).group(1)
    assert f'<tr class="line error" id="{prefix}s1-L5">' in block
    assert f'href="#{prefix}s1-L11"' in block and f'id="{prefix}s1-L11"' in block
    assert "print(x)" in block and f'id="{prefix}s1-L1"' not in block
    assert block.count("&#8942;") == 1  # line 1 left out, then lines 2-11 (3 around each mark) in one run
    assert block.startswith('<div class="gradcheck-report">') and "<html" not in block


def test_a_mechanical_fix_shows_as_a_diff_beside_its_line(seed_report, seed_lines):
    pytest.importorskip("libcst")
    page = _source_page(seed_report).read_text()
    notes = page.split(f'id="L{seed_lines["item"]}">')[1].split('<tr class="line')[0]  # the notes under the cut
    diff = re.search(r'<details class="diff" open>.*?</details>', notes).group(0)
    assert '<span class="del">-' in diff and ".item() * delta_theta" in diff
    assert '<span class="add">+' in diff and "model.w[i][j] * delta_theta" in diff
    assert '<div class="verdict' not in page  # trace does not verify


def test_the_verdict_of_fix_verify_shows_in_the_index_and_beside_the_line_escaped(tmp_path):
    script = tmp_path / "step.py"
    script.write_text("import torch\n\nw = torch.ones(2)\nx = w.sum().item()\n")
    hostile = "<img src=x onerror=window.pwned=1>"
    finding = Finding("item", "error", "w", str(script), 4, "x = w.sum().item()", "made a number", "keep a tensor",
                      fix_diff="--- a/step.py\n+++ b/step.py\n@@ -4 +4 @@\n-x = w.sum().item()\n"
                               f"+x = w.sum()  # {hostile}\n",
                      verified="not enough", verify_note=f"w still gets no gradient: step.py:9 (detach) {hostile}")
    out = tmp_path / "report"
    write_html_report(out, [finding], [WatchedTensor("w", (2,), False)])
    index, page = (out / "index.html").read_text(), _source_page(out).read_text()
    assert '<div class="verdict not-enough"><b>not enough</b> w still gets no gradient: step.py:9 (detach)' in index
    assert '<span class="add">+x = w.sum()  # &lt;img src=x' in page and '<span class="del">-x = w.sum().item()' in page
    assert '<b>not enough</b> w still gets no gradient' in page
    assert "<img src=x" not in index + page


def test_grad_stats_plot_draws_each_weight_escaped_and_survives_zero_and_non_finite_values():
    hostile = "<img src=x onerror=window.pwned=1>.weight"
    layers = [LayerGradients(hostile, (4, 4), (1, 2, 3), (1e-3, 0.0, float("inf")), (1.0, 1.0, 1.0), 4, 0,
                             ("exploding_gradient",), (1, 2), (1e-2, float("nan"))),
              LayerGradients("b.weight", (4, 4), (1, 2, 3), (1.0, 2.0, 3.0), (1.0, 1.0, 1.0), 4, 0, (), (1, 2),
                             (0.1, 0.2)),
              LayerGradients("b.bias", (4,), (1, 2, 3), (1.0, 2.0, 3.0), (1.0, 1.0, 1.0))]  # vectors are left out
    section = grad_stats_section(layers)
    assert "<img src=x" not in section and section.count("<title>&lt;img src=x onerror=window.pwned=1&gt;.weight") == 2
    assert section.count("<polyline") == 4 and "b.bias" not in section
    assert '<b class="flagged">exploding_gradient</b>' in section
    assert grad_stats_section(layers[2:]) == ""  # nothing to plot without a weight: no section
