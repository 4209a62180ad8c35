"""Tracing works on CUDA tensors too (skipped where no GPU is present)."""
from __future__ import annotations

import textwrap

import pytest
import torch

from reference.l2c import L2CConfig, run_l2c

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
device = "cuda"
x, y = torch.randn(8, 4, device=device), torch.randint(0, 3, (8,), device=device)
"""


def run(snippet, code):
    return snippet(PRELUDE + textwrap.dedent(code))


def test_item_and_reload_cuts_on_cuda(snippet):
    script = run(snippet, """
    alpha = torch.zeros(2, device=device, requires_grad=True)
    model, a, b = (nn.Linear(4, 3).to(device) for _ in range(3))
    w = torch.softmax(alpha, 0)
    w0, w1 = w[0].item(), w[1].item()  # <- item
    mixed = {k: w0 * a.state_dict()[k] + w1 * b.state_dict()[k] for k in a.state_dict()}
    model.load_state_dict(mixed)  # <- reload
    F.cross_entropy(model(x), y).backward()
    """)
    t = script.run()
    found = [(f.kind, f.line) for f in t.findings if f.tensor == "alpha"]
    assert found == [("item", script.line("item")), ("state_dict_reload", script.line("reload"))]


def test_no_grad_and_detach_on_cuda(snippet):
    script = run(snippet, """
    alpha = torch.zeros(3, device=device, requires_grad=True)
    model = nn.Linear(4, 3).to(device)
    with torch.no_grad():
        w = torch.softmax(alpha, 0)  # <- no_grad
    F.cross_entropy(model(x) * w, y).backward()
    """)
    t = script.run()
    assert [(f.kind, f.line) for f in t.findings if f.tensor == "alpha"] == [("no_grad", script.line("no_grad"))]


def test_non_leaf_made_by_cuda_is_named(snippet):
    script = run(snippet, """
    w = torch.randn(4, 3, requires_grad=True).cuda()  # <- made
    F.cross_entropy(x @ w, y).backward()
    print(w.grad)  # <- read
    """)
    found = [f for f in script.run().findings if f.kind == "non_leaf_watched"]
    assert [f.line for f in found] == [script.line("read")]
    assert f":{script.line('made')}" in found[0].message


def test_reference_l2c_on_cuda_is_silent_bitwise_and_learns():
    from gradcheck_l2c import trace

    config = L2CConfig(nodes=3, rounds=2, local_epochs=1, t0=0, k0=1, device="cuda")
    plain = run_l2c(config)
    with trace() as t:
        traced = run_l2c(config)
    assert [f for f in t.findings if f.severity in ("error", "warning")] == []
    assert {w.name: w.got_grad for w in t.watched}["alpha"] is True
    assert torch.equal(plain.alpha, traced.alpha)
    assert all(torch.equal(plain.params[k], traced.params[k]) for k in plain.params)
