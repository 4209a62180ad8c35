"""Item 1 of the hostile-conditions issue: threads.

One trace runs at a time: a second thread that starts one while another thread's trace runs gets a
`ConcurrentTraceError` (PyTorch's torch-function modes are per thread), whoever wins the race. Nothing
crashes, neither thread's tensors leak into the other's trace, and torch ends as it began. Backward
passes in threads the trace does not cover are reported as `untraced_thread` warnings.
"""
import json
import os
import subprocess
import sys
import threading

import pytest
import torch
from torch import nn
from torch.overrides import _get_current_function_mode_stack

from gradcheck_l2c.errors import ConcurrentTraceError, NestedTraceError
from gradcheck_l2c.tracer import trace

ENV = {name: value for name, value in os.environ.items() if name not in ("GRADCHECK_L2C_DISABLED", "NO_COLOR")}


def step(model: nn.Module) -> None:
    """A training step whose loss reaches ``w`` and the model only through `.item()`: all are cut."""
    w = torch.ones(3, requires_grad=True)
    value = (model(torch.ones(2, 3)).sum() + w.sum()).item()
    loss = torch.tensor(value, requires_grad=True) * 2
    loss.backward()
    model.zero_grad()


def test_two_threads_racing_to_trace_never_cross_talk_and_leave_torch_alone(untouched, torch_state,
                                                                         one_torch_thread):
    outcomes = []
    for _ in range(40):
        barrier = threading.Barrier(2)
        results: dict[str, object] = {}

        def worker(name: str) -> None:
            model = nn.Linear(3, 1)
            barrier.wait()
            try:
                with trace() as t:
                    step(model)
                results[name] = t
            except ConcurrentTraceError as error:
                step(model)  # the program carries on untraced
                results[name] = error
            results[name + " model"] = model
            results[name + " modes"] = len(_get_current_function_mode_stack())

        threads = [threading.Thread(target=worker, args=(name,), name=name) for name in ("A", "B")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert torch_state() == untouched
        assert (results["A modes"], results["B modes"]) == (0, 0)
        refused = [r for r in (results["A"], results["B"]) if isinstance(r, ConcurrentTraceError)]
        outcomes.append(len(refused))
        for name in ("A", "B"):
            if isinstance(results[name], ConcurrentTraceError):
                assert "already running in thread" in str(results[name])
                assert "torch-function modes are per thread" in str(results[name])
                continue
            t, other = results[name], results[("B" if name == "A" else "A") + " model"]
            # its own tensors only: the model's two parameters, w, and the loss's leaf
            assert len(t.watched) == 4
            assert {w.name for w in t.watched} >= {"Linear.bias", "Linear.weight", "w"}
            theirs = {id(p) for p in other.parameters()}
            assert not any(id(w.tensor) in theirs for w in t._state.registry.all)
            about = [(f.kind, f.tensor) for f in t.findings if f.kind != "untraced_thread"]
            assert about == [("item", "w"), ("tensor_rewrap", "w")]
    assert 1 in outcomes  # the race was real at least once: one thread was refused


def test_a_trace_entered_twice_is_refused_and_keeps_running(untouched, torch_state):
    t = trace()
    with t:
        with pytest.raises(NestedTraceError, match="already running"):
            with t:
                pass
        assert len(_get_current_function_mode_stack()) == 1
    assert torch_state() == untouched


WORKER_SCRIPT = """
import threading
import torch
from torch import nn

model = nn.Linear(3, 1)


def train():
    for _ in range(2):
        value = model(torch.ones(4, 3)).sum().item()
        torch.tensor(value, requires_grad=True).backward()  # <- backward
    print("grad is", model.weight.grad)


worker = threading.Thread(target=train, name="Worker-1")
worker.start()
worker.join()
"""


def test_backward_calls_in_an_untraced_thread_are_reported(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    line = 1 + WORKER_SCRIPT.splitlines().index(
        "        torch.tensor(value, requires_grad=True).backward()  # <- backward")
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, env=ENV, timeout=300)
    traced = subprocess.run([sys.executable, "-m", "gradcheck_l2c", "trace", "--json", "r.json", str(script)],
                            capture_output=True, text=True, cwd=tmp_path, env=ENV, timeout=300)
    assert traced.stdout.encode() == plain.stdout == b"grad is None\n"
    assert traced.returncode == 0  # a warning
    assert "2 backward calls ran in thread Worker-1, which is not traced" in traced.stderr
    assert f"worker.py:{line}: warning: untraced_thread (×2): thread Worker-1" in traced.stderr
    (finding,) = json.loads((tmp_path / "r.json").read_text())["findings"]
    assert (finding["kind"], finding["severity"], finding["line"], finding["count"]) == (
        "untraced_thread", "warning", line, 2)


def test_the_traced_thread_itself_is_not_reported(snippet):
    t = snippet("""
        import torch
        w = torch.ones(3, requires_grad=True)
        (w * 2).sum().backward()
        torch.autograd.grad((w * 3).sum(), w)
    """).run()
    assert t.backward_count == 2
    assert t.findings == []
