"""``fix --write`` changes only what it may: files inside the script's project, without uncommitted changes (unless
--force), never a read-only one, always keeping FILE.orig; ``fix`` alone prints the diff and changes nothing."""
from __future__ import annotations

import os
import stat
import subprocess
import textwrap

import pytest

from gradcheck_l2c.cli import main
from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.fix.applier import write_patched

BUG = textwrap.dedent("""\
    import torch
    w = torch.ones(3, requires_grad=True)
    loss = w.sum().detach() * 2  # the cut
    loss.requires_grad_()
    loss.backward()
    print(w.grad)
""")


def git(folder, *args):
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


@pytest.fixture
def project(tmp_path):
    """A git repository holding a committed script with a .detach() cut."""
    git(tmp_path, "init", "-q")
    (tmp_path / "train.py").write_text(BUG)
    git(tmp_path, "add", "train.py")
    git(tmp_path, "commit", "-qm", "bug")
    return tmp_path


def test_diff_is_printed_and_nothing_changes(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["fix", "train.py"]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("--- a/train.py\n+++ b/train.py\n")
    assert "-loss = w.sum().detach() * 2  # the cut\n+loss = w.sum() * 2  # the cut\n" in out.out
    assert "tensor([1., 1., 1.])" not in out.out  # the script's output goes to stderr
    assert (project / "train.py").read_text() == BUG
    assert not (project / "train.py.orig").exists()


def test_write_changes_the_file_and_keeps_the_original(project, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["fix", "--write", "train.py"]) == 0
    assert (project / "train.py.orig").read_text() == BUG
    assert "loss = w.sum() * 2  # the cut" in (project / "train.py").read_text()


def test_write_refuses_uncommitted_changes_unless_forced(project, monkeypatch, capsys):
    monkeypatch.chdir(project)
    dirty = BUG.replace("# the cut", "# edited, not committed")
    (project / "train.py").write_text(dirty)
    assert main(["fix", "--write", "train.py"]) == 2
    assert "has uncommitted changes" in capsys.readouterr().err
    assert (project / "train.py").read_text() == dirty and not (project / "train.py.orig").exists()
    assert main(["fix", "--write", "--force", "train.py"]) == 0
    assert (project / "train.py.orig").read_text() == dirty


def test_write_refuses_a_read_only_file_even_when_forced(project):
    script = project / "train.py"
    script.chmod(stat.S_IRUSR)
    try:
        with pytest.raises(UsageError, match="not writable"):
            write_patched({str(script): (BUG, "changed\n")}, str(project), force=True)
    finally:
        script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    assert script.read_text() == BUG and not (project / "train.py.orig").exists()


def test_write_never_touches_a_file_outside_the_project(project, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere") / "helpers.py"
    elsewhere.write_text("x = 1\n")
    (project / "train.py").write_text("x = 2\n")
    with pytest.raises(UsageError, match="outside the project"):
        write_patched({str(elsewhere): ("x = 1\n", "x = 3\n"), str(project / "train.py"): ("x = 2\n", "x = 4\n")},
                      str(project), force=True)
    assert elsewhere.read_text() == "x = 1\n" and (project / "train.py").read_text() == "x = 2\n"


def test_an_existing_orig_is_not_overwritten_without_force(project):
    (project / "train.py.orig").write_text("the user's own backup\n")
    with pytest.raises(UsageError, match="orig exists already"):
        write_patched({str(project / "train.py"): (BUG, "changed\n")}, str(project))
    assert (project / "train.py.orig").read_text() == "the user's own backup\n"


def test_fix_without_libcst_says_how_to_install_it(project, monkeypatch, capsys):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "libcst" else find_spec(name, *a))
    assert main(["fix", str(project / "train.py")]) == 2
    assert "pip install 'gradcheck-l2c[fix]'" in capsys.readouterr().err


def test_options_end_at_the_script_and_the_rest_goes_to_it():
    from gradcheck_l2c.cli import parse_args

    options = parse_args(["fix", "--verify", "--max-steps", "2", "train.py", "--write", "--lr", "3"])
    assert (options.script, options.args) == ("train.py", ["--write", "--lr", "3"])
    assert options.verify and options.max_steps == 2 and not options.write
