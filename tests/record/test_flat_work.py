"""A long run's per-step work stays what it was at its start: the bytecode the tool runs for one step late in a run
is what it ran for the same step early on, for the loops whose every step (or fold, or task) brings new tensors,
modules or optimizers. Counted, not timed: the same on every run of one version."""
from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

import gradcheck_l2c
from gradcheck_l2c import trace

TOOL = str(Path(gradcheck_l2c.__file__).parent) + "/"


def tool_bytecodes(step: Callable[[], None], steps: int) -> int:
    """Bytecode instructions of the tool's own functions over ``steps`` calls of ``step``."""
    count = 0

    def on_call(frame, event, arg):
        if not frame.f_code.co_filename.startswith(TOOL):
            return None
        frame.f_trace_opcodes = True

        def on_event(frame, event, arg):
            nonlocal count
            if event == "opcode":
                count += 1
            return on_event

        return on_event

    sys.settrace(on_call)
    try:
        for _ in range(steps):
            step()
    finally:
        sys.settrace(None)
    return count


def k_fold() -> Callable[[], None]:
    """A model and its optimizer built per fold."""
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))

    def fold() -> None:
        model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

    return fold


def inner_copies() -> Callable[[], None]:
    """MAML-like: a copy of the model per task, stepped by an optimizer of its own; then the meta step."""
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    base = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    meta = torch.optim.Adam(base.parameters(), lr=1e-3)

    def task() -> None:
        fast = copy.deepcopy(base)
        inner = torch.optim.SGD(fast.parameters(), lr=0.1)
        inner.zero_grad()
        nn.functional.cross_entropy(fast(x), y).backward()
        inner.step()
        meta.zero_grad()
        nn.functional.cross_entropy(base(x), y).backward()
        meta.step()

    return task


def input_per_sample() -> Callable[[], None]:
    """An input optimised per sample (style transfer, an adversarial search): a fresh leaf and its own optimizer."""
    y = torch.randint(0, 3, (8,))
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))

    def sample() -> None:
        z = torch.randn(8, 4, requires_grad=True)
        optimizer = torch.optim.Adam([z], lr=0.1)
        for _ in range(2):
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(z), y).backward()
            optimizer.step()

    return sample


def target_network() -> Callable[[], None]:
    """A target network copied from the model every few steps and used under no_grad."""
    x = torch.randn(8, 4)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    state = {"target": copy.deepcopy(model), "step": 0}

    def step() -> None:
        state["step"] += 1
        if state["step"] % 5 == 0:
            state["target"] = copy.deepcopy(model)
        with torch.no_grad():
            goal = state["target"](x)
        optimizer.zero_grad()
        (model(x) - goal).pow(2).mean().backward()
        optimizer.step()

    return step


@pytest.mark.parametrize("loop", [k_fold, inner_copies, input_per_sample, target_network])
def test_a_late_step_costs_what_an_early_one_did(loop: Callable[[], Callable[[], None]]) -> None:
    torch.manual_seed(0)
    step = loop()
    with trace() as traced:
        for _ in range(10):
            step()
        early = tool_bytecodes(step, 50)  # 50 steps: each holds the same share of discovery passes
        for _ in range(300):
            step()
        late = tool_bytecodes(step, 50)
    assert late <= early * 1.02, (early, late)
    assert not [f for f in traced.findings if f.severity == "error"]
