"""A backward refused for a value without graph ("does not require grad") after the model already learnt: a
``.detach()`` of its outputs then records no cut (its weights got gradients before), so nothing seemed to explain
the refusal. When the refusing function holds such detached values (an EWC Fisher estimate that keeps each batch's
detached log-likelihood in a list to average), the detach is the finding, with the refused call as symptom; a loss
detached after its own backward (logged) is never blamed, and keeping the graph trains silently."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

CODE = """
import torch
from torch import nn
import torch.nn.functional as F
torch.manual_seed(0)

model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
history = []
for step in range(3):
    x, y = torch.randn(4, 6), torch.randint(0, 3, (4,))
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    history.append(loss.detach())


def fisher(batches, logged):
    likelihoods = []
    for x, y in batches:
        out = F.log_softmax(model(x), dim=1)
        {keep}
    {total}
    return torch.autograd.grad(total, list(model.parameters()))  # <- grad


grads = fisher([(torch.randn(4, 6), torch.randint(0, 3, (4,))) for _ in range(3)], history)
"""
DETACHED = "likelihoods.append(out[:, 0].detach())  # <- detach"
MEAN = "total = torch.cat(likelihoods).mean()"


def _run(script):
    with trace() as traced, pytest.raises(RuntimeError, match="does not require grad"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    return [f for f in traced.findings if f.severity in ("error", "warning")]


def test_values_detached_after_the_weights_learnt_explain_the_refusal(snippet):
    script = snippet(CODE.format(keep=DETACHED, total=MEAN))
    found = _run(script)
    assert {(f.kind, f.line) for f in found} == {("detach", script.line("detach"))}
    assert all(any(r.role == "symptom" and r.line == script.line("grad") for r in f.related) for f in found)


def test_a_loss_logged_after_its_backward_is_not_blamed(snippet):
    # the refused value comes from the targets alone; the only detached values alive are the logged losses
    script = snippet(CODE.format(keep="likelihoods.append(y.float())", total="total = torch.stack(logged).mean() "
                                 "+ torch.cat(likelihoods).mean()  # <- total"))
    found = _run(script)
    assert {(f.kind, f.line) for f in found} == {("autograd_error", script.line("total"))}


def test_kept_graph_is_silent(snippet):
    script = snippet(CODE.format(keep="likelihoods.append(out[:, 0])", total=MEAN))
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
