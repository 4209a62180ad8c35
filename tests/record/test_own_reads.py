"""The tool's bookkeeping in the patches that run in the script's context (a Parameter made, a module's parameter
registered, an optimizer built, a tensor set as a module attribute) reads tensors past its own interceptor: through a
torch-function mode each read is a Python call more, paid for every parameter of a model, and it is not the script's."""
from __future__ import annotations

import os
import sys

import torch
from torch import nn

import gradcheck_l2c
from gradcheck_l2c import trace
from gradcheck_l2c.record.interceptor import Interceptor

OVERRIDES = torch.overrides.__file__
TOOL_DIR = os.path.dirname(gradcheck_l2c.__file__)


def reader() -> str:
    """The file of the code whose call the interceptor handles: the frame that read a tensor's attribute or called a C
    op, or the caller of a Python-level torch function that handed itself over (`handle_torch_function`)."""
    frame = sys._getframe(2)
    if frame.f_code.co_filename == OVERRIDES:
        while frame.f_code.co_filename == OVERRIDES:
            frame = frame.f_back
        frame = frame.f_back  # the torch function that handed itself over
    return frame.f_code.co_filename


def test_the_tools_bookkeeping_reads_no_tensor_through_its_interceptor(monkeypatch) -> None:
    from_tool = []
    original = Interceptor.__torch_function__

    def recording(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", repr(func))
        if name != "backward" and reader().startswith(TOOL_DIR):  # the stand-in for backward hands the script's over
            from_tool.append(name)
        return original(self, func, types, args, kwargs)

    monkeypatch.setattr(Interceptor, "__torch_function__", recording)
    with trace() as traced:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 1))
        model.scale = nn.Parameter(torch.ones(1))
        model.memory = torch.zeros(3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(2):
            optimizer.zero_grad()
            (model(torch.randn(5, 4)) * model.scale).pow(2).mean().backward()
            optimizer.step()
    assert from_tool == []
    assert len(traced.watched) == 7 and all(w.got_grad for w in traced.watched)
