"""A tensor with history handed to a custom ``autograd.Function`` inside another argument (a settings NamedTuple, a
dict, a plain object) gets no gradient through it: ``apply`` tracks only tensors passed as arguments themselves.
Named where the value entered the calls that lead to ``apply`` (past a thin wrapper that passes it on)."""
from __future__ import annotations

import pytest

CODE = """
from typing import NamedTuple
import types
import torch
from torch import nn
torch.manual_seed(0)


class Settings(NamedTuple):
    scale: float
    view: torch.Tensor


class Render(torch.autograd.Function):
    @staticmethod
    def forward(ctx, points, settings):
        view = {view}
        ctx.save_for_backward(points, view)
        return points @ view

    @staticmethod
    def backward(ctx, grad):
        points, view = ctx.saved_tensors
        return grad @ view.T, None


class Direct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, points, view):
        ctx.save_for_backward(points, view)
        return points @ view

    @staticmethod
    def backward(ctx, grad):
        points, view = ctx.saved_tensors
        return grad @ view.T, points.T @ grad


def render(points, view):
    return {call}


pose = nn.Parameter(torch.eye(3) + 0.1 * torch.randn(3, 3))
points = nn.Parameter(torch.randn(5, 3))
optimizer = torch.optim.SGD([pose, points], lr=0.1)
for step in range(3):
    optimizer.zero_grad()
    image = render(points, pose * 2.0)  # <- entered
    loss = image.square().mean()
    loss.backward()
    optimizer.step()
"""


def loud(snippet, view: str, call: str):
    script = snippet(CODE.format(view=view, call=call))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


@pytest.mark.parametrize("view, call", [
    ("settings.view", "Render.apply(points, Settings(1.0, view))"),
    ("settings['view']", "Render.apply(points, {'view': view})"),
    ("settings.view", "Render.apply(points, types.SimpleNamespace(view=view))"),
    ("settings[0]", "Render.apply(points, [view])"),
])
def test_a_value_hidden_in_an_argument_of_a_function_is_cut_where_it_entered(snippet, view, call):
    script, found = loud(snippet, view, call)
    assert [(f.kind, f.severity, f.tensor, f.line) for f in found] == [
        ("non_differentiable", "error", "pose", script.line("entered"))]
    assert "Render.apply()" in found[0].message and "argument of its own" in found[0].fix


def test_the_same_value_passed_as_an_argument_of_its_own_is_silent(snippet):
    _, found = loud(snippet, "settings.view", "Direct.apply(points, view)")
    assert found == []


def test_a_container_of_constants_is_silent(snippet):
    """Settings without history (a fixed camera) beside the tensors passed themselves cut nothing."""
    _, found = loud(snippet, "settings.view", "Render.apply(points @ view, Settings(1.0, torch.eye(3)))")
    assert found == []


def test_an_argument_that_cannot_be_looked_into_leaves_the_call_alone(snippet):
    """An object whose attribute lookup raises (a proxy, a lazy config) is the script's business: apply runs as it
    would untraced, and nothing is told of it."""
    script = snippet("""
import torch


class Lazy:
    __slots__ = ()

    def __getattr__(self, name):
        raise KeyError(name)


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, settings):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, None


w = torch.ones(3, requires_grad=True)
Scale.apply(w, Lazy()).sum().backward()
assert w.grad.tolist() == [2.0, 2.0, 2.0]
""")
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
