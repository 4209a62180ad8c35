"""Item 5 of the hostile-conditions issue: every output path is checked before the script starts.

A bad path is a one-line usage error (exit 2 in the CLI, pytest's usage error for the plugin's option),
and the script never runs: its side effect (a marker file) does not appear.
"""
import os
import subprocess
import sys

import pytest

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.paths import output_file, output_folder
from gradcheck_l2c.runner import EXIT_USAGE

ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR")}
SCRIPT = """
import pathlib, torch
pathlib.Path("ran").write_text("the script ran")
w = torch.randn(3, requires_grad=True)
(w * 2).sum().backward()
"""


def gradcheck(cwd, *args):
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", *args], cwd=cwd, env=ENV,
                            capture_output=True, text=True, timeout=300)
    return result.returncode, result.stdout, result.stderr


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    (tmp_path / "a_file").write_text("not a folder")
    (tmp_path / "a_folder").mkdir()
    return tmp_path


@pytest.mark.parametrize(("args", "message"), [
    (["--render", "a_file"], "--render: '{}/a_file' is a file, not a folder"),
    (["--render", "a_file/graphs"], "--render: cannot make folder '{}/a_file/graphs': '{}/a_file' is a file"),
    (["--json", "a_folder"], "--json: '{}/a_folder' is a folder; give a file name inside it"),
    (["--json", "a_file/report.json"], "--json: folder '{}/a_file' does not exist"),
    (["--json", "missing/report.json"], "--json: folder '{}/missing' does not exist"),
    (["--sarif", "a_folder"], "--sarif: '{}/a_folder' is a folder; give a file name inside it"),
])
def test_a_bad_output_path_is_one_line_and_exit_2_before_the_script_runs(workdir, args, message):
    code, stdout, stderr = gradcheck(workdir, "trace", *args, "train.py")
    assert (code, stdout) == (EXIT_USAGE, "")
    assert stderr == f"gradcheck-l2c: error: {message.format(workdir, workdir)}\n"
    assert not (workdir / "ran").exists()


def test_good_output_paths_are_made_absolute_and_a_new_render_folder_is_made_later(workdir):
    code, _, stderr = gradcheck(workdir, "trace", "--json", "report.json", "--render", "new/graphs", "train.py")
    assert code == 0, stderr
    assert (workdir / "ran").exists() and (workdir / "report.json").exists()
    assert (workdir / "new" / "graphs" / "index.html").exists()


def test_the_file_checks_write_nothing_and_the_render_folder_is_made_at_once(tmp_path):
    assert output_file(str(tmp_path / "r.json"), "--json") == str(tmp_path / "r.json")
    assert list(tmp_path.iterdir()) == []
    assert output_folder(str(tmp_path / "a" / "b"), "--render") == str(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir() and list((tmp_path / "a" / "b").iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_a_folder_without_write_permission_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(UsageError, match="cannot write"):
        output_file(str(locked / "r.json"), "--json")
    with pytest.raises(UsageError, match="cannot write in"):
        output_folder(str(locked / "graphs"), "--render")


def test_a_read_only_file_system_is_refused():
    if not os.path.isdir("/proc/self") or os.access("/proc/self", os.W_OK):
        pytest.skip("needs /proc mounted read-only for writes")
    with pytest.raises(UsageError, match="cannot write in '/proc/self'"):
        output_folder("/proc/self/graphs", "--render")


def test_pytest_render_option_pointing_at_a_file_is_a_usage_error(pytester):
    pytester.makefile(".txt", a_file="not a folder")
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("--gradcheck-render", "a_file.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --gradcheck-render: '{pytester.path}/a_file.txt' is a file, not a folder"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "test_one" not in result.stdout.str()


@pytest.mark.parametrize(("args", "message"), [
    (["--json", "train.py"], "--json: '{}/train.py' is the script being traced; writing the report there would "
                             "overwrite it"),
    (["--json", "r.json", "--sarif", "r.json"], "--sarif: '{}/r.json' is also the --json output; give each report "
                                                "its own file"),
    (["--sarif", "helpers.py"], "--sarif: '{}/helpers.py' is Python source beside the script (the run may import "
                                "it); write the report to another file"),
])
def test_an_output_path_that_would_overwrite_what_the_run_reads_is_refused(workdir, args, message):
    (workdir / "helpers.py").write_text("VALUE = 1\n")
    before = (workdir / "train.py").read_text()
    code, stdout, stderr = gradcheck(workdir, "trace", *args, "train.py")
    assert (code, stdout) == (EXIT_USAGE, "")
    assert stderr == f"gradcheck-l2c: error: {message.format(workdir)}\n"
    assert (workdir / "train.py").read_text() == before and (workdir / "helpers.py").read_text() == "VALUE = 1\n"
    assert not (workdir / "ran").exists()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_a_render_folder_the_system_refuses_is_exit_2_before_the_run(workdir):
    code, _, stderr = gradcheck(workdir, "trace", "--render", "/proc/gradcheck-graphs", "train.py")
    assert code == EXIT_USAGE and stderr.startswith("gradcheck-l2c: error: --render: cannot make folder")
    assert len(stderr.splitlines()) == 1 and not (workdir / "ran").exists()


def test_a_render_folder_the_script_turned_into_a_file_is_one_line_after_the_report(workdir):
    (workdir / "train.py").write_text(SCRIPT + """
import shutil
shutil.rmtree("graphs")
pathlib.Path("graphs").write_text("now a file")
""")
    code, _, stderr = gradcheck(workdir, "trace", "--render", "graphs", "train.py")
    assert code == 1 and "Traceback" not in stderr, stderr
    assert "gradcheck-l2c: error: --render: cannot write graphs in" in stderr


@pytest.mark.parametrize(("value", "disabled", "warned"), [
    ("1", True, False), ("TRUE", True, False), ("yes", True, False),
    ("0", False, False), ("false", False, False), ("No", False, False), ("maybe", False, True),
])
def test_only_1_true_or_yes_disable_and_other_values_are_ignored_with_a_warning(workdir, value, disabled, warned):
    env = dict(ENV, GRADCHECK_L2C_DISABLED=value)
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "--json", "r.json", "train.py"],
                            cwd=workdir, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert ("tracing is off" in result.stderr) == disabled
    assert (workdir / "r.json").exists() != disabled
    assert (f"GRADCHECK_L2C_DISABLED={value!r} is ignored" in result.stderr) == warned


def test_an_output_path_that_is_the_module_run_with_dash_m_or_source_in_a_script_folder_is_refused(
        workdir, monkeypatch, capsys):
    from gradcheck_l2c.cli import main

    (workdir / "pkg").mkdir()
    (workdir / "pkg" / "__init__.py").write_text("")
    (workdir / "pkg" / "train.py").write_text(SCRIPT)
    (workdir / "app").mkdir()
    (workdir / "app" / "__main__.py").write_text(SCRIPT)
    (workdir / "app" / "helpers.py").write_text("VALUE = 1\n")
    monkeypatch.chdir(workdir)
    assert main(["trace", "--json", "pkg/train.py", "-m", "pkg.train"]) == EXIT_USAGE
    assert "is the script being traced" in capsys.readouterr().err
    assert main(["trace", "--sarif", "app/helpers.py", "app"]) == EXIT_USAGE
    assert "is Python source beside the script" in capsys.readouterr().err
    assert (workdir / "pkg" / "train.py").read_text() == SCRIPT and not (workdir / "ran").exists()


def test_a_python_file_in_a_sibling_folder_whose_name_starts_alike_is_no_source_of_the_script(tmp_path):
    from gradcheck_l2c.paths import distinct_outputs

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "train.py").write_text(SCRIPT)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "report.py").write_text("")
    distinct_outputs(str(tmp_path / "run" / "train.py"), {"--json": str(tmp_path / "runs" / "report.py")})
