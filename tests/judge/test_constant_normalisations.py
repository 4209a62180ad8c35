"""A softmax (or log_softmax) over a dimension of size 1 is a constant: nothing reaches its input, and the
parameters behind it get all-zero gradients. Named at the softmax, not at a top-k's indices beside it
(davidmrau/mixture-of-experts#27: a top-1 gate's softmax; the one-logit softmax of a binary classifier)."""
from __future__ import annotations

import textwrap

PRELUDE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)
x, y = torch.randn(16, 8), torch.randint(0, 2, (16,)).float()
"""


def run(snippet, code: str):
    script = snippet(PRELUDE + textwrap.dedent(code))
    return script, script.run()


def loud(traced):
    return [(f.kind, f.severity, f.line) for f in traced.findings if f.severity in ("error", "warning")]


def test_a_one_logit_softmax_is_named_at_the_softmax(snippet):
    script, traced = run(snippet, """
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.Softmax(dim=1))  # <- softmax
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        F.binary_cross_entropy(model(x).squeeze(1), y).backward()
        opt.step()
    """)
    found = loud(traced)
    assert found and set(found) == {("non_differentiable", "error", script.line("softmax"))}
    assert "dimension of size 1" in traced.findings[0].message


def test_a_top1_gate_s_softmax_is_named_not_the_topk_routing(snippet):
    script, traced = run(snippet, """
    gate = nn.Parameter(torch.randn(8, 4))
    experts = nn.Linear(8, 4)
    softmax = nn.Softmax(dim=1)  # a layer the user calls on its own line: the call is named, where its input is
    opt = torch.optim.Adam([gate, *experts.parameters()], lr=1e-2)
    for step in range(2):
        logits = x @ gate
        top, index = logits.topk(1, dim=1)
        weight = softmax(top)  # <- softmax
        gates = torch.zeros_like(logits).scatter(1, index, weight)
        opt.zero_grad()
        ((gates * experts(x)).sum(1) - y).pow(2).mean().backward()
        opt.step()
    """)
    assert loud(traced) == [("non_differentiable", "error", script.line("softmax"))]


def test_a_softmax_over_the_experts_then_top_k_is_silent(snippet):
    _, traced = run(snippet, """
    gate = nn.Parameter(torch.randn(8, 4))
    experts = nn.Linear(8, 4)
    opt = torch.optim.Adam([gate, *experts.parameters()], lr=1e-2)
    for step in range(2):
        probs = torch.softmax(x @ gate, dim=1)
        top, index = probs.topk(1, dim=1)
        gates = torch.zeros_like(probs).scatter(1, index, top / top.sum(1, keepdim=True).detach())
        opt.zero_grad()
        ((gates * experts(x)).sum(1) - y).pow(2).mean().backward()
        opt.step()
    one = torch.ones(3, 1)
    torch.softmax(one, dim=1)  # a constant of tensors without history: nothing to say
    """)
    assert loud(traced) == []
