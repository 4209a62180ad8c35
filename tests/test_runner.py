"""ScriptRunner runs files, folders and modules as `python` would, and puts `sys` back afterwards."""
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from gradcheck_l2c.errors import UsageError
from gradcheck_l2c.runner import ScriptRunner, run_script, show_exception

SCRIPTS = Path(__file__).parent / "scripts"


@pytest.fixture
def sys_state(monkeypatch):
    """The parts of `sys` a run may touch, captured before; modules the scripts import are dropped after."""
    before = (list(sys.argv), list(sys.path), sys.modules["__main__"], os.getcwd())
    yield before
    for name in ("cli_sibling", "cli_pkg", "cli_pkg.probe", "cli_pkg.helper", "cli_pkg.__main__"):
        sys.modules.pop(name, None)


def assert_restored(before):
    argv, path, main, _ = before
    assert sys.argv == argv
    assert sys.path == path
    assert sys.modules["__main__"] is main


def write(path: Path, source: str) -> Path:
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def test_file_runs_as_main_with_its_folder_first_on_sys_path(tmp_path, sys_state, capsys):
    out = tmp_path / "state.json"
    script = str(SCRIPTS / "cli_probe.py")
    runner = ScriptRunner(script, [str(out), "--lr", "3"])
    runner.prepare()
    runner.run()

    state = json.loads(out.read_text())
    assert state["name"] == "__main__"
    assert state["file"] == script
    assert state["spec"] is None and state["package"] is None
    assert state["loader"] == "SourceFileLoader"
    assert state["argv"] == [script, str(out), "--lr", "3"]
    assert state["path0"] == str(SCRIPTS)
    assert state["main_is_this_module"] is True
    assert state["sibling"] == "sibling imported"
    assert state["greeting"] == "hello from a data file"
    assert capsys.readouterr().out == "arg: --lr\narg: 3\n"
    assert_restored(sys_state)


def test_relative_script_path_is_kept_in_argv_and_made_absolute_in_file(tmp_path, sys_state, monkeypatch):
    monkeypatch.chdir(SCRIPTS.parent)
    out = tmp_path / "state.json"
    runner = ScriptRunner(os.path.join("scripts", "cli_probe.py"), [str(out)])
    runner.prepare()
    runner.run()

    state = json.loads(out.read_text())
    assert state["argv"][0] == os.path.join("scripts", "cli_probe.py")
    assert state["file"] == str(SCRIPTS / "cli_probe.py")
    assert runner.filename == str(SCRIPTS / "cli_probe.py")


def test_folder_with_main_runs_like_python_does(tmp_path, sys_state):
    folder = tmp_path / "app"
    folder.mkdir()
    write(folder / "__main__.py", """\
        import json, sys
        json.dump([__spec__.name, __package__, __file__, sys.path[0], sys.argv], open(sys.argv[1], "w"))
    """)
    out = tmp_path / "state.json"
    runner = ScriptRunner(str(folder), [str(out)])
    runner.prepare()
    runner.run()

    assert json.loads(out.read_text()) == ["__main__", "", str(folder / "__main__.py"), str(folder),
                                           [str(folder), str(out)]]
    assert_restored(sys_state)


def test_module_runs_with_its_spec_and_relative_imports(sys_state, monkeypatch, capsys):
    monkeypatch.chdir(SCRIPTS)
    runner = ScriptRunner("cli_pkg.probe", ["-x", "1"], as_module=True)
    runner.prepare()
    runner.run()

    assert capsys.readouterr().out == "__main__ cli_pkg.probe cli_pkg probe.py relative import ok ['-x', '1']\n"
    assert runner.argv0 == runner.filename == str(SCRIPTS / "cli_pkg" / "probe.py")
    assert_restored(sys_state)


def test_package_runs_its_main_module(sys_state, monkeypatch, capsys):
    monkeypatch.chdir(SCRIPTS)
    runner = ScriptRunner("cli_pkg", [], as_module=True)
    runner.prepare()
    runner.run()

    assert capsys.readouterr().out == "__main__ cli_pkg.__main__ cli_pkg []\n"


@pytest.mark.parametrize(
    ("target", "as_module", "message"),
    [
        ("no_such_script.py", False, "can't open file"),
        ("no_such_module_xyz", True, "no module named no_such_module_xyz"),
        ("no_such_package_xyz.mod", True, "error while finding module specification for 'no_such_package_xyz.mod'"),
    ],
)
def test_nothing_to_run_is_a_usage_error(target, as_module, message, sys_state, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=message):
        ScriptRunner(target, as_module=as_module).prepare()
    assert sys.path == sys_state[1]


def test_folder_without_main_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="can't find '__main__' module in"):
        ScriptRunner(str(tmp_path)).prepare()


def test_package_without_main_is_a_usage_error(tmp_path, monkeypatch, sys_state):
    (tmp_path / "lonely_pkg_xyz").mkdir()
    (tmp_path / "lonely_pkg_xyz" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="'lonely_pkg_xyz' is a package and cannot be directly executed"):
        ScriptRunner("lonely_pkg_xyz", as_module=True).prepare()
    sys.modules.pop("lonely_pkg_xyz", None)


def test_syntax_error_names_the_script_and_line(tmp_path):
    script = write(tmp_path / "broken.py", "x = 1\ndef f(:\n    pass\n")
    with pytest.raises(SyntaxError) as caught:
        ScriptRunner(str(script)).prepare()
    assert caught.value.filename == str(script)
    assert caught.value.lineno == 2


def test_sys_is_restored_when_the_script_raises_or_exits(tmp_path, sys_state):
    script = write(tmp_path / "messy.py", """\
        import os, sys
        sys.path.insert(0, "/somewhere")
        os.chdir(os.path.dirname(__file__))
        if sys.argv[1] == "exit":
            sys.exit(3)
        raise RuntimeError("boom")
    """)
    for mode, expected in (("exit", SystemExit), ("raise", RuntimeError)):
        runner = ScriptRunner(str(script), [mode])
        with pytest.raises(expected):
            runner.run()
        assert_restored(sys_state)
        assert os.getcwd() == sys_state[3]


@pytest.mark.parametrize(
    ("body", "status", "stderr"),
    [
        ("sys.exit(3)", 3, ""),
        ("sys.exit(0)", 0, ""),
        ("sys.exit()", 0, ""),
        ("sys.exit('giving up')", 1, "giving up\n"),
        ("print('done')", 0, ""),
    ],
)
def test_run_script_turns_sys_exit_into_a_status(body, status, stderr, tmp_path, capsys):
    script = write(tmp_path / "ends.py", f"import sys\n{body}\n")
    outcome = run_script(ScriptRunner(str(script)))
    assert outcome.exit_status == status
    assert outcome.exception is None
    assert capsys.readouterr().err == stderr


def test_run_script_keeps_the_exception_and_the_context_manager_sees_it(tmp_path):
    script = write(tmp_path / "fails.py", "raise KeyError('k')\n")
    seen = []

    class Around:
        def __enter__(self):
            return self

        def __exit__(self, kind, value, tb):
            seen.append(kind)

    outcome = run_script(ScriptRunner(str(script)), Around())
    assert isinstance(outcome.exception, KeyError)
    assert outcome.exit_status == 0
    assert seen == [KeyError]


def test_the_lines_a_run_script_is_at_end_at_the_script(tmp_path, sys_state, capsys):
    """What the tool walks for a script's path of lines (where a value was made, where a backward ran) stops at the
    frame that runs it: the frames below (this test's, a console script's) are none of the script's."""
    script = write(tmp_path / "stack.py", """
        from gradcheck_l2c.record.stacks import user_stack

        def inner():
            return user_stack()

        print([(code.co_filename, code.co_name) for _, code, _ in inner()])
    """)
    assert run_script(ScriptRunner(str(script))).exit_status == 0
    assert capsys.readouterr().out.strip() == str([(str(script), "<module>")])


def test_traceback_shows_the_scripts_frames_and_hides_the_tools(capsys, sys_state):
    script = str(SCRIPTS / "cli_raise.py")
    outcome = run_script(ScriptRunner(script))
    tool_files = {tb.tb_frame.f_code.co_filename for tb in _walk(outcome.exception.__traceback__)}
    assert any(name.endswith("runner.py") for name in tool_files)  # the raw traceback has them

    show_exception(outcome.exception)
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert f'File "{script}", line 16, in <module>' in err
    assert f'File "{script}", line 10, in fail' in err
    assert "runner.py" not in err
    assert err.endswith("ValueError: the script failed on purpose\n")


def test_verbose_traceback_keeps_the_tools_frames(capsys, sys_state):
    outcome = run_script(ScriptRunner(str(SCRIPTS / "cli_raise.py")))
    show_exception(outcome.exception, keep_tool_frames=True)
    assert "runner.py" in capsys.readouterr().err


def test_syntax_error_is_shown_as_python_shows_it(tmp_path, capsys):
    script = write(tmp_path / "broken.py", "def f(:\n    pass\n")
    with pytest.raises(SyntaxError) as caught:
        ScriptRunner(str(script)).prepare()
    show_exception(caught.value)
    expected = f'  File "{script}", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n'
    assert capsys.readouterr().err.endswith(expected)


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def test_traceback_through_the_tracers_torch_mode_matches_plain_python(tmp_path, capsys):
    from gradcheck_l2c.tracer import trace

    script = write(tmp_path / "bad_backward.py", """\
        import torch
        w = torch.randn(3, requires_grad=True)
        (w * 2).backward()
    """)
    outcome = run_script(ScriptRunner(str(script)), trace())
    show_exception(outcome.exception)
    err = capsys.readouterr().err
    assert err.count(", in backward\n") == 2  # Tensor.backward, then torch.autograd.backward, once each
    assert "handle_torch_function" not in err and "gradcheck_l2c" not in err
    message = "RuntimeError: grad can be implicitly created only for scalar outputs\n"
    assert message in err
    assert err.split(message, 1)[1].startswith("gradcheck-l2c: bad_backward.py:3: ")  # the tool's note, last
