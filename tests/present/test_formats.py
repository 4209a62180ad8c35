"""The stderr formats (concise, github), SARIF and GitLab's code quality report on the seed script and on a
clean one, against golden files; what ``--output-format`` picks by default; escaping of GitHub workflow commands."""
import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from gradcheck_l2c import __version__
from gradcheck_l2c.cli import default_output_format, main
from gradcheck_l2c.present.github import annotation, escape_data, escape_property
from gradcheck_l2c.records import Finding

ROOT = Path(__file__).resolve().parents[2]
SEED = "reference/seed_l2c.py"
CLEAN = """\
import torch
w = torch.ones(3, requires_grad=True)
opt = torch.optim.SGD([w], lr=0.1)
for _ in range(2):
    opt.zero_grad()
    loss = (w * 2.0).sum()
    print(loss.item())
    loss.backward()
    opt.step()
"""


def trace(*args):
    """``gradcheck-l2c trace ARGS`` in this process: (exit status, the report's lines on stderr, without the
    script's own output and the "wrote ..." lines)."""
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        code = main(["trace", *args])
    lines = [line for line in stderr.getvalue().splitlines()
             if line.startswith(("::", "gradcheck-l2c:", "reference/", "clean.py"))
             and not line.startswith("gradcheck-l2c: wrote")]
    return code, "\n".join(lines) + "\n"


def normalised(text: str, *folders: tuple[Path, str]) -> str:
    """Machine paths replaced by placeholders, the tool's version too, for golden files."""
    for folder, name in folders:
        text = text.replace(folder.as_uri(), f"file://{name}").replace(str(folder), name)
    return text.replace(f'"{__version__}"', '"<VERSION>"')


@pytest.fixture(scope="module")
def seed_runs(tmp_path_factory, one_torch_thread):
    """The seed traced twice from the repository root: concise with --sarif and --gitlab-codequality, then
    github by default."""
    out = tmp_path_factory.mktemp("seed")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        patch.delenv("GITHUB_ACTIONS", raising=False)
        concise = trace("--sarif", str(out / "seed.sarif"), "--gitlab-codequality", str(out / "seed.gl.json"),
                        "--output-format", "concise", SEED)
        patch.setenv("GITHUB_ACTIONS", "true")
        github = trace(SEED)
    codequality = json.loads((out / "seed.gl.json").read_text(encoding="utf-8"))
    return concise, github, json.loads((out / "seed.sarif").read_text(encoding="utf-8")), codequality


def test_seed_concise_lists_each_finding_as_path_line_col_code(seed_runs, golden):
    (code, text), _, _, _ = seed_runs
    assert code == 1
    assert "reference/seed_l2c.py:188:45: GC001 [error] CNNCifar.alpha: .item() turned" in text
    assert "reference/seed_l2c.py:192:17: GC007 [error] CNNCifar.alpha: load_state_dict() copied" in text
    golden("seed.concise.txt", text)


def test_seed_github_annotations_are_the_default_in_actions(seed_runs, golden):
    _, (code, text), _, _ = seed_runs
    assert code == 1
    assert ("::error file=reference/seed_l2c.py,line=188,col=45,title=GC001 item::CNNCifar.alpha: .item() "
            "turned") in text
    golden("seed.github.txt", text)


def test_seed_sarif_validates_and_names_alphas_causes_at_their_lines(seed_runs, golden, sarif_errors):
    _, _, document, _ = seed_runs
    assert sarif_errors(document) == []
    (run,) = document["runs"]
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": ROOT.as_uri() + "/"}}
    alpha = [(result["ruleId"], result["locations"][0]["physicalLocation"]["region"]["startLine"])
             for result in run["results"] if result["properties"]["tensor"] == "CNNCifar.alpha"
             and result["level"] == "error"]
    assert alpha == [("GC001", 188), ("GC007", 192)]
    item = next(result for result in run["results"] if result["ruleId"] == "GC001")
    assert "See [where the symptom showed (seed_l2c.py:207)](1)." in item["message"]["text"]
    assert item["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 207
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": SEED, "uriBaseId": "%SRCROOT%"}
    golden("seed.sarif.json", normalised(json.dumps(document, indent=2, ensure_ascii=False) + "\n",
                                         (ROOT, "<ROOT>")))


def test_seed_gitlab_code_quality_names_alphas_causes(seed_runs, golden):
    *_, issues = seed_runs
    alpha = [(issue["check_name"], issue["location"]) for issue in issues
             if issue["description"].startswith("CNNCifar.alpha:") and issue["severity"] == "major"]
    assert alpha == [("GC001", {"path": SEED, "lines": {"begin": 188}}),
                     ("GC007", {"path": SEED, "lines": {"begin": 192}})]
    golden("seed.codequality.json", json.dumps(issues, indent=2, ensure_ascii=False) + "\n")


@pytest.mark.parametrize("output_format", ["full", "concise", "github"])
def test_clean_script_has_only_the_summary(tmp_path, monkeypatch, golden, sarif_errors, output_format):
    (tmp_path / "clean.py").write_text(CLEAN)
    monkeypatch.chdir(tmp_path)
    code, text = trace("--sarif", "clean.sarif", "--output-format", output_format, "clean.py")
    assert code == 0
    assert text == "gradcheck-l2c: the watched tensor got a gradient; no findings\n"
    document = json.loads((tmp_path / "clean.sarif").read_text(encoding="utf-8"))
    assert sarif_errors(document) == []
    golden("clean.sarif.json", normalised(json.dumps(document, indent=2) + "\n", (tmp_path, "<TMP>")))


def test_paths_with_spaces_and_non_ascii(tmp_path, monkeypatch, sarif_errors, one_torch_thread):
    folder = tmp_path / "my runs" / "grüße"
    folder.mkdir(parents=True)
    (folder / "trän ing.py").write_text(
        "import torch\nw = torch.ones(3, requires_grad=True)\nv = torch.ones(3, requires_grad=True)\n"
        "größe = w.sum().item()\nloss = (v * größe).sum()\nloss.backward()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, _ = trace("--sarif", "out.sarif", "--output-format", "concise", "my runs/grüße/trän ing.py")
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        main(["trace", "--output-format", "concise", "my runs/grüße/trän ing.py"])
    assert code == 1
    # the column counts characters (Python's positions count UTF-8 bytes: 11 here)
    assert "my runs/grüße/trän ing.py:4:9: GC001 [error] w: .item() turned" in stderr.getvalue()
    document = json.loads((tmp_path / "out.sarif").read_text(encoding="utf-8"))
    assert sarif_errors(document) == []
    (result,) = [r for r in document["runs"][0]["results"] if r["ruleId"] == "GC001"]
    location = result["locations"][0]["physicalLocation"]
    # tmp_path is outside every repository: an absolute, percent-encoded file URI
    assert location["artifactLocation"] == {"uri": (folder / "trän ing.py").as_uri()}
    assert "%20" in location["artifactLocation"]["uri"] and "%C3%BC" in location["artifactLocation"]["uri"]
    assert location["region"] == {"startLine": 4, "startColumn": 9, "snippet": {"text": "größe = w.sum().item()"}}


def test_a_script_inside_a_repository_gets_a_relative_uri(tmp_path, monkeypatch, sarif_errors, one_torch_thread):
    repo = tmp_path / "re po"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub dir").mkdir()
    (repo / "sub dir" / "tränen.py").write_text(
        "import torch\nw = torch.ones(3, requires_grad=True)\nv = torch.ones(3, requires_grad=True)\n"
        "s = w.sum().item()\nloss = (v * s).sum()\nloss.backward()\n", encoding="utf-8")
    monkeypatch.chdir(repo / "sub dir")
    code, _ = trace("--sarif", "out.sarif", "tränen.py")
    document = json.loads((repo / "sub dir" / "out.sarif").read_text(encoding="utf-8"))
    assert code == 1 and sarif_errors(document) == []
    (run,) = document["runs"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == repo.as_uri() + "/"
    (result,) = [r for r in run["results"] if r["ruleId"] == "GC001"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "sub%20dir/tr%C3%A4nen.py", "uriBaseId": "%SRCROOT%"}


def test_default_output_format_is_github_only_in_actions_without_a_terminal(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    assert default_output_format(io.StringIO()) == "full"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert default_output_format(io.StringIO()) == "github"
    assert default_output_format(Terminal()) == "full"


def test_github_escapes_data_and_properties():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    finding = Finding("item", "info", "t", "/elsewhere/a,b:c.py", 3, "x", "100% lost", "keep it", column=None)
    assert annotation(finding) == ("::notice file=/elsewhere/a%2Cb%3Ac.py,line=3,title=GC001 item::"
                                   "t: 100%25 lost%0Afix: keep it")


def test_sarif_option_parses_before_the_script_and_a_missing_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["trace", "--sarif", str(tmp_path / "no" / "x.sarif"), "clean.py"]) == 2
    assert capsys.readouterr().err == (f"gradcheck-l2c: error: --sarif: folder {str(tmp_path / 'no')!r} "
                                       "does not exist\n")
    assert re.search("invalid choice: 'fancy'", _usage(["trace", "--output-format", "fancy", "x.py"], capsys))


def _usage(argv, capsys):
    assert main(argv) == 2
    return capsys.readouterr().err
