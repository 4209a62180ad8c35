"""The tracer's promises: it restores everything, refuses nesting, can be switched off, and never
changes what the traced program computes."""
from __future__ import annotations

import copy
import gc
import json
import pickle
import subprocess
import sys
import threading
import warnings

import pytest
import torch
from torch import nn
from torch.overrides import _get_current_function_mode_stack

import gradcheck_l2c
from gradcheck_l2c import NestedTraceError, trace
from gradcheck_l2c.present.jsonreport import json_document
from gradcheck_l2c.tracer import active_trace


def installed_state():
    """Everything a trace patches, as identities to compare before and after."""
    from torch.nn.modules import module
    from torch.optim.optimizer import _global_optimizer_pre_hooks

    return (
        len(_get_current_function_mode_stack()),
        nn.Parameter.__dict__["__new__"],
        torch.optim.Optimizer.__dict__["__init__"],
        torch.optim.lr_scheduler.LRScheduler.__dict__["__init__"],
        torch.optim.lr_scheduler.LRScheduler.__dict__["step"],
        torch.Tensor.__dict__["backward"],
        torch.Tensor.__dict__.get("__new__"),  # shadowed during a trace, inherited from torch's C base otherwise
        torch.from_numpy,
        torch.autograd.Variable,
        warnings.showwarning,
        torch.autograd.Function.__dict__["apply"],
        dict(module._global_parameter_registration_hooks),
        dict(module._global_module_registration_hooks),
        dict(_global_optimizer_pre_hooks),
    )


def small_training(steps: int = 3) -> tuple[nn.Module, list[float]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    x, y = torch.randn(16, 4), torch.randint(0, 3, (16,))
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model, losses


@pytest.mark.parametrize("ending", [ValueError, SystemExit, KeyboardInterrupt])
def test_everything_is_restored_however_the_code_ends(ending):
    before = installed_state()
    with pytest.raises(ending):
        with trace():
            assert active_trace() is not None
            assert installed_state() != before
            small_training(1)
            raise ending(3)
    assert installed_state() == before
    assert active_trace() is None


def test_watched_tensors_lose_their_hooks_on_exit():
    model = nn.Linear(2, 2)
    with trace(watch=model):
        model(torch.randn(1, 2)).sum().backward()
    assert all(not p._post_accumulate_grad_hooks for p in model.parameters())


def test_a_trace_entered_twice_is_refused_and_a_nested_one_joins_the_outer():
    with trace() as outer:
        with pytest.raises(NestedTraceError, match="already running"):
            with outer:
                pass
        with trace() as inner:
            assert active_trace() is outer
        assert active_trace() is outer and inner.findings == []
    assert active_trace() is None


def test_decorator_traces_each_call():
    tracer = trace(watch=["alpha"])

    @tracer
    def step():
        alpha = torch.zeros(2, requires_grad=True)
        weight = torch.softmax(alpha, 0)[0].item()
        (torch.ones(2, requires_grad=True) * weight).sum().backward()
        return alpha

    step()
    assert [f.kind for f in tracer.findings] == ["item"]
    assert step.__name__ == "step"


def test_decorator_prints_the_report_when_it_found_something(capsys):
    @trace()
    def step(cut):
        alpha = torch.zeros(2, requires_grad=True)
        weight = torch.softmax(alpha, 0)[0]
        weight = weight.item() if cut else weight
        (torch.ones(2, requires_grad=True) * weight).sum().backward()

    step(cut=False)
    assert capsys.readouterr().err == ""
    step(cut=True)
    err = capsys.readouterr().err
    assert err.startswith("gradcheck-l2c: 1 of 2 watched tensors got no gradient (alpha)")
    assert f"test_tracer.py:{step.__wrapped__.__code__.co_firstlineno + 4}: error: item" in err


def test_disabled_by_environment(monkeypatch):
    monkeypatch.setenv("GRADCHECK_L2C_DISABLED", "1")
    before = installed_state()
    with trace() as t:
        assert installed_state() == before
        alpha = torch.zeros(2, requires_grad=True)
        (torch.ones(2, requires_grad=True) * alpha.sum().item()).sum().backward()
    assert t.findings == [] and t.watched == []


def test_results_are_bitwise_identical():
    _, plain_losses = small_training()
    model_plain, _ = small_training()
    with trace():
        model_traced, traced_losses = small_training()
    assert plain_losses == traced_losses
    for a, b in zip(model_plain.parameters(), model_traced.parameters()):
        assert torch.equal(a, b)


def test_tainted_numbers_behave_and_pickle_as_floats():
    with trace():
        alpha = torch.zeros(2, requires_grad=True)
        value = torch.softmax(alpha, 0)[0].item()
    assert value == 0.5 and isinstance(value, float) and repr(value) == "0.5"
    restored = pickle.loads(pickle.dumps(value))
    assert type(restored) is float and restored == 0.5
    assert type(copy.copy(value)) is float and isinstance(value + 1, float) and value + 1 == 1.5


def test_importing_the_package_imports_nothing_heavy():
    code = "import sys, gradcheck_l2c; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert gradcheck_l2c.__version__


def test_threads_and_dataloader_workers_run_under_a_trace():
    dataset = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,)))
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=2)
    model = nn.Linear(4, 3)
    results = []
    with trace() as t:
        worker = threading.Thread(target=lambda: results.append(model(torch.randn(2, 4)).sum().item()))
        worker.start()
        for x, y in loader:
            nn.functional.cross_entropy(model(x), y).backward()
        worker.join()
    assert len(results) == 1 and t.backward_count == 4
    assert [w.got_grad for w in t.watched] == [True, True]
    assert t.findings == []


@pytest.mark.parametrize("collecting", [True, False])
def test_the_garbage_collector_is_left_as_the_script_had_it(collecting):
    """Judging pauses the collector (`tracer._collector_paused`): it must come back on, and only if it was on."""
    (gc.enable if collecting else gc.disable)()
    try:
        with trace() as t:
            torch.zeros(2, requires_grad=True).sum().backward()
        assert t.findings == [] and gc.isenabled() is collecting
    finally:
        gc.enable()


def test_findings_are_json_ready():
    with trace() as t:
        alpha = torch.zeros(2, requires_grad=True)
        (torch.ones(2, requires_grad=True) * torch.softmax(alpha, 0)[0].item()).sum().backward()
    document = json.loads(json.dumps(json_document(script="-", argv=[], exit_code=0, watched=t.watched,
                                                   findings=t.findings)))
    assert document["findings"][0]["kind"] == "item"
    assert document["findings"][0]["line"] > 0
    assert {w["name"]: w["got_grad"] for w in document["watched"]}["alpha"] is False


def test_torch_warnings_point_at_the_user_line(snippet):
    script = snippet("""
import torch
a = torch.randn(3, requires_grad=True)
copy = torch.tensor(a * 2)  # <- warns
""")
    shown = []
    with warnings.catch_warnings():  # restores showwarning afterwards
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, category, filename, lineno, *rest: shown.append((filename, lineno))
        script.run()
    assert shown == [(str(script.path), script.line("warns"))]


def test_a_warning_torch_raises_in_a_backward_points_at_the_user_line_as_untraced(snippet):
    """torch names the caller of ``backward()`` by a fixed ``stacklevel``, which the trace's frames in between
    (the engine's stand-in, the mode's dispatch) would make fall on torch's own code."""
    script = snippet("""
import torch
from torch import nn
layer = nn.Linear(3, 1)
layer.register_full_backward_hook(lambda module, grad_input, grad_output: None)
layer(torch.randn(2, 3)).sum().backward()  # <- warns
""")
    shown = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, category, filename, lineno, *rest: shown.append((filename, lineno))
        script.run()
    assert shown == [(str(script.path), script.line("warns"))]


@pytest.mark.parametrize(("pattern", "expected"), [
    ("weight", ["Net.fc1.weight", "Net.fc2.0.weight"]),
    ("fc2", ["Net.fc2.0.bias", "Net.fc2.0.weight"]),
    ("fc2.*", ["Net.fc2.0.bias", "Net.fc2.0.weight"]),
    ("*.fc1.bias", ["Net.fc1.bias"]),
])
def test_a_bare_name_watches_every_tensor_so_named_and_a_module_name_its_subtree(pattern, expected):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(2, 2)
            self.fc2 = torch.nn.Sequential(torch.nn.Linear(2, 2))

        def forward(self, x):
            return self.fc2(self.fc1(x))

    net = Net()
    with trace(watch=pattern) as t:
        net(torch.ones(1, 2)).sum().backward()
    assert sorted(w.name for w in t.watched) == expected
    assert t.unmatched_patterns == []


def test_a_progress_listener_hears_each_backward_with_the_tensors_still_missing():
    """What the CLI's status line shows while a script runs: backward calls so far, and the watched tensors a cut
    kept a gradient from that none has reached since."""
    heard = []
    tracer = trace()
    tracer.on_progress = lambda calls, missing: heard.append((calls, missing()))
    with tracer:
        w = torch.randn(3, requires_grad=True)
        b = torch.randn(3, requires_grad=True)
        (torch.tensor(w.sum().item()) + b.sum()).backward()  # w's value reaches the loss as a number only
        b.sum().backward()
        w.sum().backward()  # w is reached at last
    assert heard == [(1, 1), (2, 1), (3, 0)]
