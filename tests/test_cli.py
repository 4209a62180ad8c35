"""`gradcheck-l2c trace` end to end: scripts in tests/scripts run as `python` runs them, reports on stderr.

Most tests start `python -m gradcheck_l2c` in a subprocess, the way users run it.
"""
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gradcheck_l2c import __version__
from gradcheck_l2c.cli import main, parse_args
from gradcheck_l2c.runner import EXIT_INTERRUPTED, EXIT_USAGE, use_color
from gradcheck_l2c.present.status import StatusLine, sharing_terminal

SCRIPTS = Path(__file__).parent / "scripts"
ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR", "GITHUB_ACTIONS")}


def gradcheck(*args, cwd=SCRIPTS):
    """Run `python -m gradcheck_l2c ARGS` in ``cwd``; stdout as bytes, stderr as text."""
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", *args], cwd=cwd, env=ENV,
                            capture_output=True, timeout=300)
    return result.returncode, result.stdout, result.stderr.decode()


def python(*args, cwd=SCRIPTS):
    """Run plain `python ARGS`, for comparison."""
    result = subprocess.run([sys.executable, *args], cwd=cwd, env=ENV, capture_output=True, timeout=300)
    return result.returncode, result.stdout, result.stderr.decode()


# ---- running the script as python would ---------------------------------------------------------


def test_options_after_the_script_go_to_the_script(tmp_path):
    out = tmp_path / "state.json"
    code, stdout, stderr = gradcheck("trace", "-q", "cli_probe.py", str(out), "-q", "--watch", "x", "--help")

    assert code == 0, stderr
    assert stdout == b"arg: -q\narg: --watch\narg: x\narg: --help\n"
    state = json.loads(out.read_text())
    assert state["argv"] == ["cli_probe.py", str(out), "-q", "--watch", "x", "--help"]
    assert state["name"] == "__main__"
    assert state["file"] == str(SCRIPTS / "cli_probe.py")
    assert state["path0"] == str(SCRIPTS)
    assert state["sibling"] == "sibling imported"
    assert state["greeting"] == "hello from a data file"
    assert state["main_is_this_module"] is True
    assert stderr.count("\n") == 1  # -q: the summary line only


def test_double_dash_ends_the_options_and_later_ones_reach_the_script(tmp_path):
    out = tmp_path / "state.json"
    code, stdout, stderr = gradcheck("trace", "--", "cli_probe.py", str(out), "--", "-v")
    assert code == 0, stderr
    assert json.loads(out.read_text())["argv"] == ["cli_probe.py", str(out), "--", "-v"]


def test_script_in_another_folder_imports_its_siblings(tmp_path):
    out = tmp_path / "state.json"
    code, _, stderr = gradcheck("trace", str(SCRIPTS / "cli_probe.py"), str(out), cwd=tmp_path)
    assert code == 0, stderr
    state = json.loads(out.read_text())
    assert (state["sibling"], state["path0"]) == ("sibling imported", str(SCRIPTS))


def test_module_runs_with_m_and_keeps_its_arguments():
    code, stdout, stderr = gradcheck("trace", "-m", "cli_pkg.probe", "-q", "--json", "x")
    assert code == 0, stderr
    assert stdout == b"__main__ cli_pkg.probe cli_pkg probe.py relative import ok ['-q', '--json', 'x']\n"


def test_script_output_is_byte_identical_to_plain_python():
    expected = python("cli_output.py")
    code, stdout, stderr = gradcheck("trace", "cli_output.py")
    assert code == 0, stderr
    assert stdout == expected[1]
    assert "all 2 watched tensors got a gradient; no findings" in stderr


def test_dataloader_with_worker_processes_under_the_main_guard():
    expected = python("cli_dataloader.py")
    code, stdout, stderr = gradcheck("trace", "cli_dataloader.py")
    assert code == 0, stderr
    assert stdout == expected[1] == b"batches: 4\nweight got a gradient: True\n"


def test_spawned_processes_find_functions_defined_in_main():
    code, stdout, stderr = gradcheck("trace", "cli_spawn.py")
    assert code == 0, stderr
    assert stdout == b"[1, 4, 9]\n"


# ---- findings, exit status and the JSON document ------------------------------------------------


def test_item_cut_is_reported_at_its_line_and_written_to_json(tmp_path):
    report = tmp_path / "report.json"
    expected_stdout = python("cli_item.py")[1]
    code, stdout, stderr = gradcheck("trace", "--json", str(report), "cli_item.py")

    assert code == 1
    assert stdout == expected_stdout == b"None\n"
    document = json.loads(report.read_text())
    assert document["version"] == 2
    assert document["script"] == str(SCRIPTS / "cli_item.py")
    assert document["argv"] == ["cli_item.py"]
    assert document["exit_code"] == 1
    w = [entry for entry in document["watched"] if entry["name"] == "w"]
    assert w == [{"name": "w", "got_grad": False, "shape": [3]}]
    item = [entry for entry in document["findings"] if entry["kind"] == "item"]
    assert len(item) == 1
    assert item[0]["severity"] == "error"
    assert item[0]["tensor"] == "w"
    assert item[0]["file"] == str(SCRIPTS / "cli_item.py")
    assert item[0]["line"] == 5
    assert item[0]["code"] == "x = w.sum().item()"
    assert item[0]["count"] == 1
    assert item[0]["message"] and item[0]["fix"]
    assert item[0]["column"] == 5 and item[0]["suppressed"] is False
    assert set(item[0]) == {"kind", "severity", "tensor", "file", "line", "code", "message", "fix", "count",
                            "related", "column", "suppressed", "fix_diff", "verified", "verify_note"}
    assert item[0]["fix_diff"] == item[0]["verified"] == ""  # `trace` writes no diff; `fix` does

    assert "1 of 2 watched tensors got no gradient (w)" in stderr
    assert "cli_item.py:5: error: item" in stderr
    assert "x = w.sum().item()" in stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["cli_exit.py", "3"], 3),  # the script's own status wins
        (["cli_exit.py", "0"], 1),  # a clean exit is judged by the findings
        (["--fail-on", "never", "cli_exit.py"], 0),
    ],
)
def test_exit_status(args, expected):
    code, _, stderr = gradcheck("trace", "-q", *args)
    assert code == expected
    assert "got no gradient (w)" in stderr


def test_exception_shows_the_scripts_traceback_then_the_report(tmp_path):
    report = tmp_path / "report.json"
    code, _, stderr = gradcheck("trace", "--json", str(report), "cli_raise.py")
    script = SCRIPTS / "cli_raise.py"

    assert code == 1
    assert stderr.startswith("Traceback (most recent call last):\n"
                             f'  File "{script}", line 16, in <module>\n')
    assert f'  File "{script}", line 10, in fail\n' in stderr
    assert "gradcheck_l2c" not in stderr.split("ValueError: the script failed on purpose")[0]
    assert stderr.index("ValueError: the script failed on purpose") < stderr.index("cli_raise.py:14: error: item")
    assert json.loads(report.read_text())["exit_code"] == 1


def test_ctrl_c_reports_and_exits_130():
    code, _, stderr = gradcheck("trace", "cli_raise.py", "interrupt")
    assert code == EXIT_INTERRUPTED
    assert "KeyboardInterrupt" in stderr
    assert "cli_raise.py:14: error: item" in stderr


def test_watch_pattern_that_matches_nothing_lists_the_names_that_exist():
    code, _, stderr = gradcheck("trace", "--watch", "alpa", "cli_item.py")
    assert code == EXIT_USAGE  # the script ran; a check that watched nothing is a usage error
    error = "gradcheck-l2c: error: --watch pattern 'alpa' matched no tensor; the tensors seen were: "
    (line,) = stderr.splitlines()[-1:]
    assert line.startswith(error)
    assert "w" in line[len(error):].split(", ")


def test_a_mistyped_watch_pattern_beside_one_that_matched_warns_and_keeps_the_report(monkeypatch, capsys):
    monkeypatch.chdir(SCRIPTS)
    assert main(["trace", "--watch", "w", "--watch", "ww", "cli_item.py"]) == 1
    stderr = capsys.readouterr().err
    assert "gradcheck-l2c: warning: --watch pattern 'ww' matched no tensor" in stderr
    assert "cli_item.py:5: error: item" in stderr


def test_watch_pattern_that_matches_nothing_in_a_script_that_crashed_is_a_warning():
    code, _, stderr = gradcheck("trace", "--watch", "alpa", "cli_raise.py")
    assert code == 1
    assert "gradcheck-l2c: warning: --watch pattern 'alpa' matched no tensor" in stderr


def test_demo_traces_the_seed_then_shows_alpha_learning(tmp_path, monkeypatch, capsys):
    from gradcheck_l2c import demo

    monkeypatch.setattr(demo, "DEMO_ROUNDS", 2)
    seed = demo.seed_script()
    item_line = next(number for number, line in enumerate(Path(seed).read_text().splitlines(), 1)
                     if ".item() * delta_theta" in line)

    assert main(["demo", "--out", str(tmp_path / "out")]) == 0
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    assert document["script"] == seed
    alpha = [entry for entry in document["watched"] if entry["name"] == "CNNCifar.alpha"]
    assert alpha == [{"name": "CNNCifar.alpha", "got_grad": False, "shape": [100, 100]}]
    assert any(entry["kind"] == "item" and entry["tensor"] == "CNNCifar.alpha" and entry["line"] == item_line
               for entry in document["findings"])
    assert (tmp_path / "out" / "index.html").is_file()
    assert f'#L{item_line}">reference/seed_l2c.py:{item_line}</a>' in (tmp_path / "out" / "html" / "index.html").read_text()
    text = capsys.readouterr().out
    assert f"seed_l2c.py:{item_line}: error: item" in text
    rows = [line.split() for line in text.splitlines()
            if line.split()[:1] and line.split()[0].isdigit() and line.rstrip().endswith("%")]
    assert [int(row[0]) for row in rows] == [1, 2]
    assert all(float(norm) > 0 for row in rows for norm in row[1:-2])  # alpha.grad norms per node


# ---- usage errors: one line, exit 2 -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["trace", "no_such_script.py"], "can't open file"),
        (["trace", "cli_pkg/.."], "can't find '__main__' module in"),
        (["trace", "-m", "no_such_module_xyz"], "no module named no_such_module_xyz"),
        (["trace", "--bogus", "cli_item.py"], "unrecognized arguments: --bogus"),
        (["trace"], "trace needs a script"),
        (["trace", "--max-findings", "-1", "cli_item.py"], "expected a number >= 0"),
        (["trace", "--full", "cli_item.py"], "--full needs --render DIR or --html DIR"),
        (["trace", "--render", "out", "--format", "gif", "cli_item.py"], "unknown image format 'gif'"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, message):
    code, stdout, stderr = gradcheck(*args)
    assert code == EXIT_USAGE
    assert stdout == b""
    assert stderr.startswith("gradcheck-l2c: error: ")
    assert message in stderr
    assert stderr.count("\n") == 1


def test_syntax_error_is_shown_as_python_shows_it(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("x = 1\ndef f(:\n    pass\n")
    expected = python(str(script))
    code, _, stderr = gradcheck("trace", str(script))
    assert code == expected[0] == 1
    assert stderr == expected[2]


def test_version_and_help_from_the_installed_command():
    command = os.path.join(os.path.dirname(sys.executable), "gradcheck-l2c")
    version = subprocess.run([command, "--version"], capture_output=True, text=True, env=ENV)
    assert (version.returncode, version.stdout) == (0, f"gradcheck-l2c {__version__}\n")
    helped = subprocess.run([command, "trace", "--help"], capture_output=True, text=True, env=ENV)
    assert helped.returncode == 0
    assert "--watch PATTERN" in helped.stdout and "exit status:" in helped.stdout


# ---- in-process: argument splitting, colour, status line ----------------------------------------


@pytest.mark.parametrize(
    ("argv", "script", "module", "args", "watch"),
    [
        (["trace", "--watch", "a", "s.py", "--watch", "b"], "s.py", None, ["--watch", "b"], ["a"]),
        (["trace", "--watch=a", "-v", "s.py"], "s.py", None, [], ["a"]),
        (["trace", "-m", "pkg.mod", "-q", "x"], None, "pkg.mod", ["-q", "x"], None),
        (["trace", "-mpkg.mod", "x"], None, "pkg.mod", ["x"], None),
        (["trace", "--json", "out.json", "--", "-odd.py", "--"], "-odd.py", None, ["--"], None),
    ],
)
def test_parse_args_stops_at_the_script(argv, script, module, args, watch):
    options = parse_args(argv)
    assert (options.script, options.module, options.args, options.watch) == (script, module, args, watch)


def test_main_returns_2_without_a_traceback(capsys):
    assert main(["trace", "--watch"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err == "gradcheck-l2c: error: argument --watch: expected one argument (see gradcheck-l2c trace --help)\n"


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(FakeTerminal()) is True
    assert use_color(io.StringIO()) is False
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color(FakeTerminal()) is False


def test_status_line_waits_throttles_and_clears():
    now = [0.0]
    stream = io.StringIO()
    status = StatusLine(stream, delay=1.0, interval=0.5, clock=lambda: now[0])
    status.update(1, lambda: 0)
    assert stream.getvalue() == ""  # short runs never see it

    now[0] = 1.0
    status.update(40, lambda: 2)
    assert stream.getvalue() == "\r\x1b[Kgradcheck-l2c: 40 backward calls, 2 tensors without a gradient so far"
    now[0] = 1.2
    status.update(41, lambda: 2)  # too soon: not redrawn
    now[0] = 1.5
    status.update(42, lambda: 3)
    assert stream.getvalue().endswith("\r\x1b[Kgradcheck-l2c: 42 backward calls, 3 tensors without a gradient so far")
    assert "41" not in stream.getvalue()

    status.clear()
    assert stream.getvalue().endswith("so far\r\x1b[K")
    status.clear()  # nothing on screen: nothing written
    assert stream.getvalue().endswith("so far\r\x1b[K")


def test_status_line_counts_the_missing_tensors_only_when_it_draws():
    """The count walks every tensor a cut kept a gradient from: asked at every backward, a loop cutting a fresh leaf
    per step would slow down as it runs (in a terminal only, where the line is shown)."""
    now, asked = [0.0], []
    status = StatusLine(io.StringIO(), delay=1.0, interval=0.5, clock=lambda: now[0])

    def missing() -> int:
        asked.append(now[0])
        return 7

    for step in range(2000):  # 2,000 backwards over 2 s: drawn at 1.0, 1.5 and 2.0 s
        now[0] = step / 1000
        status.update(step, missing)
    now[0] = 2.0
    status.update(2000, missing)
    assert asked == [1.0, 1.5, 2.0]


def test_script_output_erases_the_status_line_and_holds_it_back(monkeypatch):
    now = [5.0]
    terminal, script_out = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", script_out)
    status = StatusLine(terminal, delay=0.0, interval=0.0, quiet=1.0, clock=lambda: now[0])
    with sharing_terminal(status):
        status.update(1, lambda: 0)
        print("epoch 1", 0.5)
        assert script_out.getvalue() == "epoch 1 0.5\n"  # unchanged, through the stand-in
        assert terminal.getvalue().endswith("so far\r\x1b[K")  # erased before the script wrote
        status.update(2, lambda: 0)
        assert "2 backward calls" not in terminal.getvalue()  # the script spoke less than 1 s ago
        now[0] = 6.5
        sys.stdout.write("loss: ")
        now[0] = 8.0
        status.update(3, lambda: 0)
        assert "3 backward calls" not in terminal.getvalue()  # never over a half-written line
        sys.stdout.write("0.25\n")
        now[0] = 9.5
        status.update(4, lambda: 1)
        assert terminal.getvalue().endswith("4 backward calls, 1 tensor without a gradient so far")
    assert sys.stdout is script_out
    assert terminal.getvalue().endswith("so far\r\x1b[K")
