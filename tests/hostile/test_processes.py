"""Item 9 of "Nothing lost, nothing changed": child processes started with multiprocessing are traced, and
their findings join the parent's report (text, JSON, SARIF), each marked with the process it came from, at the
worker's own line. A child that cannot be traced is still reported as untraced (GC023), with the reason."""
import json
import multiprocessing
import multiprocessing.util
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from gradcheck_l2c import trace
from gradcheck_l2c.children import LOST, ChildProcesses
from gradcheck_l2c.tracer import active_trace

needs_fork = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork")
ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR")}


@pytest.fixture(autouse=True)
def fails_instead_of_hanging():
    """A child that never ends (a Pool worker that missed the SIGTERM of its pool's terminate()) fails its test after
    three minutes instead of hanging the suite; the pool's daemonic workers are ended when the test process exits."""
    def expire(signum, frame):  # not an OSError, which multiprocessing's waits swallow
        pytest.fail("a child process did not end within 180 s", pytrace=False)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(180)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def cut(seed):
    """A training step whose gradient is cut inside the worker."""
    w = torch.ones(3, requires_grad=True)
    torch.tensor((w * seed).sum().item(), requires_grad=True).backward()
    return w.grad is None


CUT_LINE = cut.__code__.co_firstlineno + 3  # the line of `.item()` in `cut`


def learn(seed):
    """A training step that is fine."""
    w = torch.ones(3, requires_grad=True)
    (w * seed).sum().backward()
    return w.grad.tolist()


class OwnRun(multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods()
                                         else "spawn").Process):
    def run(self):
        cut(1)


def items(t):
    return [(f.kind, os.path.basename(f.file), f.line, f.processes) for f in t.findings if f.kind == "item"]


def run_process(method):
    process = multiprocessing.get_context(method).Process(target=cut, args=(1,))
    with trace() as t:
        process.start()
        process.join(timeout=60)
    assert process.exitcode == 0 and process._target is cut  # it ran, and the target is the script's again
    return t, process.name


def test_a_cut_in_a_spawned_process_is_reported_at_its_line(untouched):
    t, name = run_process("spawn")
    assert name.startswith("SpawnProcess-")
    assert items(t) == [("item", "test_processes.py", CUT_LINE, (name,))]
    assert not [f for f in t.findings if f.kind == "untraced_process"]


@needs_fork
def test_a_cut_in_a_forked_process_is_reported_at_its_line(untouched):
    t, name = run_process("fork")
    assert items(t) == [("item", "test_processes.py", CUT_LINE, (name,))]


@needs_fork
def test_a_cut_in_a_pool_worker_is_reported_though_the_pool_ends_it_with_sigterm(untouched):
    with trace() as t:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            worker = pool._pool[0].name
            results = pool.map(cut, [1, 2])
    assert results == [True, True]
    assert items(t) == [("item", "test_processes.py", CUT_LINE, (worker,))]


@needs_fork
def test_correct_workers_stay_silent_and_compute_the_same(untouched):
    context = multiprocessing.get_context("fork")
    with context.Pool(2) as pool:
        untraced = pool.map(learn, [1.5, 2.0, 3.0])
    with trace() as t:
        with context.Pool(2) as pool:
            traced = pool.map(learn, [1.5, 2.0, 3.0])
        process = context.Process(target=learn, args=(1.0,))
        process.start()
        process.join(timeout=60)
    assert traced == untraced and process.exitcode == 0
    assert t.findings == [] and {w.got_grad for w in t.watched} == {True}


@needs_fork
def test_a_worker_terminated_while_its_trace_is_set_up_reports_that_nothing_ran(untouched):
    """A Pool's ``terminate()`` may reach a worker still setting up its trace (a loaded machine): it dies of
    SIGTERM as it would have, and reports an empty result, not a lost child."""
    context = multiprocessing.get_context("fork")
    setting_up = context.Event()

    def slow_trace():
        setting_up.set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # short sleeps: the handler runs within 10 ms even where SIGTERM did
            time.sleep(0.01)  # not cut the sleep short (seen once in CI: the child died as a 60 s sleep ended)
        return trace()

    lost = []
    children = ChildProcesses(slow_trace, active_trace, lambda site, why: lost.append(why))
    process = context.Process(target=learn, args=(1.0,), daemon=True)
    children.start(process, None, process.start)
    assert setting_up.wait(timeout=60)
    process.terminate()
    process.join(timeout=60)
    results = children.finish()
    assert process.exitcode == -signal.SIGTERM
    assert [(result.process, result.findings, result.watched) for result in results] == [(process.name, [], [])]
    assert lost == []


class Starting:
    """Holds a forked child in its start-up, before its target runs (an after-fork callback, as a spawned child
    importing torch is held), until SIGTERM ends it."""

    def __init__(self, context):
        self.ready = context.Event()
        multiprocessing.util.register_after_fork(self, Starting.hold)

    def hold(self):
        self.ready.set()
        time.sleep(60)


def terminated_while_starting(children, context):
    """Start a child through ``children``, end it with SIGTERM while it is still starting, and finish."""
    starting = Starting(context)
    process = context.Process(target=cut, args=(1,), daemon=True)
    try:
        children.start(process, "site", process.start)
        assert starting.ready.wait(timeout=60)
    finally:
        del starting  # weakly registered: later forks are not held
    process.terminate()
    process.join(timeout=60)
    assert process.exitcode == -signal.SIGTERM
    return children.finish()


@needs_fork
def test_a_worker_terminated_before_its_target_began_is_not_reported(untouched):
    """A Pool's ``terminate()`` may end a worker still starting (a spawned one importing torch, a loaded machine):
    it ran nothing of the script's, so the report says nothing of it (it said "ended without a report")."""
    context = multiprocessing.get_context("fork")
    lost = []
    results = terminated_while_starting(ChildProcesses(trace, active_trace, lambda site, why: lost.append(why)),
                                        context)
    assert results == [] and lost == []


def die_of_sigterm(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


@needs_fork
def test_a_child_under_the_scripts_own_sigterm_handler_that_dies_of_it_is_still_reported(untouched):
    """A child whose target runs under the script's own SIGTERM handler writes no result when that handler ends it:
    it may have run the script's code, so it stays reported as ended without a report."""
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    lost = []
    children = ChildProcesses(trace, active_trace, lambda site, why: lost.append(why))
    previous = signal.signal(signal.SIGTERM, die_of_sigterm)  # inherited by the forked child
    try:
        process = context.Process(target=patient, args=(ready,), daemon=True)
        children.start(process, "site", process.start)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert ready.wait(timeout=60)
    process.terminate()
    process.join(timeout=60)
    assert process.exitcode == -signal.SIGTERM
    assert children.finish() == [] and lost == [LOST]


class Unjudgeable:
    """A child's trace whose judging fails."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None

    @property
    def findings(self):
        raise RuntimeError("judging failed")


def patient(ready):
    """A worker loop that survives whatever its tasks raise (as a Pool's does)."""
    ready.set()
    while True:
        try:
            time.sleep(0.01)
        except Exception:
            pass


@needs_fork
def test_a_child_whose_report_fails_on_sigterm_still_dies_of_it(untouched):
    """An exception from writing the report must not reach the code SIGTERM interrupted: a Pool's worker loop
    would catch it and wait for tasks forever, and the pool's ``terminate()`` with it."""
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    children = ChildProcesses(Unjudgeable, active_trace, lambda site, why: None)
    process = context.Process(target=patient, args=(ready,), daemon=True)
    children.start(process, None, process.start)
    assert ready.wait(timeout=60)
    process.terminate()
    process.join(timeout=30)
    if process.exitcode is None:
        process.kill()
    children.finish()
    assert process.exitcode == -signal.SIGTERM


@needs_fork
def test_a_process_that_cannot_be_traced_is_reported_with_the_reason(untouched):
    with trace() as t:
        process = OwnRun()
        process.start()
        start_line = sys._getframe().f_lineno - 1
        process.join(timeout=60)
    assert process.exitcode == 0
    found = [(f.kind, f.line, f.count) for f in t.findings if f.kind == "untraced_process"]
    assert found == [("untraced_process", start_line, 1)]
    assert "OwnRun overrides run()" in t.findings[0].message


def killed():
    cut(1)
    os.kill(os.getpid(), signal.SIGKILL)


@needs_fork
def test_a_child_killed_before_it_could_report_is_reported_as_untraced(untouched):
    with trace() as t:
        process = multiprocessing.get_context("fork").Process(target=killed)
        process.start()
        start_line = sys._getframe().f_lineno - 1
        process.join(timeout=60)
    assert process.exitcode == -signal.SIGKILL
    found = [(f.kind, f.line) for f in t.findings]
    assert found == [("untraced_process", start_line)]
    assert "ended without a report" in t.findings[0].message


SCRIPT = """
import multiprocessing
import torch

def work(seed):
    w = torch.ones(3, requires_grad=True)
    torch.tensor((w * seed).sum().item(), requires_grad=True).backward()  # a cut inside the worker
    return w.grad is None

if __name__ == "__main__":
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        print(pool.map(work, [1, 2]))
"""


def test_the_cli_reports_a_spawned_pool_worker_in_text_json_and_sarif(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    result = subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "--json", "r.json", "--sarif", "r.sarif",
                             "train.py"], cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=300)
    assert (result.returncode, result.stdout) == (1, "[True, True]\n"), result.stderr
    assert "train.py:7: error: item [process SpawnPoolWorker-1]" in result.stderr
    assert "untraced" not in result.stderr
    findings = json.loads((tmp_path / "r.json").read_text())["findings"]
    assert ("item", 7, ["SpawnPoolWorker-1"]) in [(f["kind"], f["line"], f.get("processes")) for f in findings]
    sarif = json.loads((tmp_path / "r.sarif").read_text())["runs"][0]["results"]
    marked = [r for r in sarif if r["properties"].get("processes") == ["SpawnPoolWorker-1"]]
    assert marked and all("(in process SpawnPoolWorker-1)" in r["message"]["text"] for r in marked)
    assert {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in marked} == {7}
