"""What "torch exactly as it was" means for the hostile-condition tests: every hook and patch a trace
installs, read back so that a test can compare before and after."""
from __future__ import annotations

import signal
import warnings
from multiprocessing.process import BaseProcess

import pytest
import torch
from torch.nn.modules import module as module_hooks
from torch.optim import optimizer as optimizer_module
from torch.overrides import _get_current_function_mode_stack

VARIABLE = torch.autograd.variable.Variable  # the class itself, whatever a trace puts in its place


def read_torch_state() -> dict[str, object]:
    """The identity of everything a trace patches, and the sizes of the global hook tables it adds to."""
    return {
        "mode stack": len(_get_current_function_mode_stack()),
        "Parameter.__new__": torch.nn.Parameter.__dict__["__new__"],
        "Module.__setattr__": torch.nn.Module.__dict__["__setattr__"],
        "Tensor.backward": torch.Tensor.__dict__["backward"],
        "Tensor.__new__": torch.Tensor.__dict__.get("__new__"),
        "Optimizer.__init__": torch.optim.Optimizer.__dict__["__init__"],
        "LRScheduler.__init__": torch.optim.lr_scheduler.LRScheduler.__dict__["__init__"],
        "LRScheduler.step": torch.optim.lr_scheduler.LRScheduler.__dict__["step"],
        "torch.from_numpy": torch.from_numpy,
        "torch.autograd.Variable": torch.autograd.Variable,
        "torch.autograd.variable.Variable": torch.autograd.variable.Variable,
        "engine": VARIABLE.__dict__["_execution_engine"],
        "Function.apply": torch.autograd.Function.__dict__["apply"],
        "warnings.showwarning": warnings.showwarning,
        "Process.start": BaseProcess.__dict__["start"],
        "SIGINT handler": signal.getsignal(signal.SIGINT),
        "SIGTERM handler": signal.getsignal(signal.SIGTERM),
        "parameter hooks": len(module_hooks._global_parameter_registration_hooks),
        "module hooks": len(module_hooks._global_module_registration_hooks),
        "forward pre-hooks": len(module_hooks._global_forward_pre_hooks),
        "forward hooks": len(module_hooks._global_forward_hooks),
        "step pre-hooks": len(optimizer_module._global_optimizer_pre_hooks),
    }


@pytest.fixture(scope="session", autouse=True)
def autograd_started_before_any_compile():
    """The first backward of a process starts autograd's engine; started after ``torch.compile`` ran, it makes forked
    children refuse every backward (torch's "Autograd and Fork"). A script trains before it forks, and so does this
    process before any test, whichever order they run in (test_compile.py, then a fork test, alone)."""
    torch.ones(1, requires_grad=True).sum().backward()


@pytest.fixture
def torch_state():
    """``torch_state()`` reads the state now (a fixture: test modules cannot import a conftest by name)."""
    return read_torch_state


@pytest.fixture
def untouched():
    """The state before the test; the test compares with it (and so does the fixture, afterwards)."""
    before = read_torch_state()
    yield before
    assert read_torch_state() == before


@pytest.fixture(autouse=True)
def python_ctrl_c():
    """Each test starts with Python's own Ctrl-C handler, whatever code run earlier in this process left
    (some of torch's workers ignore SIGINT), and the test's own comparisons start from it."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
