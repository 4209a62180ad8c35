"""A value one loss trains, taken in without ``.detach()`` by an earlier loss whose step leaves its weights alone (a
peer's output as deep mutual learning's target, a generator's output in the discriminator's loss): that earlier
backward frees its graph, and the value's own loss then finds it freed. Named where the earlier loss took it in, the
line to ``.detach()``; with the detach both peers train silently."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

PEERS = """
import torch
import torch.nn.functional as F
from torch import nn
torch.manual_seed(0)

models = [nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4)) for _ in range(2)]
optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in models]
for x, y in [(torch.randn(8, 6), torch.randint(0, 4, (8,))) for _ in range(2)]:
    outputs = [model(x) for model in models]
    for i in range(2):
        other = outputs[1 - i]
        target = F.softmax({target}, dim=1)  # <- target
        loss = F.cross_entropy(outputs[i], y) + F.kl_div(F.log_softmax(outputs[i], dim=1), target, reduction="batchmean")
        optimizers[i].zero_grad()
        loss.backward()  # <- backward
        optimizers[i].step()
"""

GAN = """
import torch
from torch import nn
torch.manual_seed(0)

generator, critic = nn.Sequential(nn.Linear(4, 6), nn.Tanh()), nn.Sequential(nn.Linear(6, 1))
g_optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
c_optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
for step in range(2):
    fake = generator(torch.randn(8, 4))
    c_loss = critic({target}).mean() - critic(torch.randn(8, 6)).mean()  # <- target
    c_optimizer.zero_grad()
    c_loss.backward()
    c_optimizer.step()
    g_loss = -critic(fake).mean()
    g_optimizer.zero_grad()
    g_loss.backward()  # <- backward
    g_optimizer.step()
"""


@pytest.mark.parametrize("code, value", [(PEERS, "other"), (GAN, "fake")], ids=["mutual_learning", "gan"])
def test_the_earlier_loss_that_took_the_value_in_is_named(snippet, code, value):
    script = snippet(code.format(target=value))
    with trace() as traced, pytest.raises(RuntimeError, match="backward through the graph a second time"):
        exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    found = [f for f in traced.findings if f.severity in ("error", "warning")]
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("target"))]
    assert any(r.role == "symptom" and r.line == script.line("backward") for r in found[0].related)
    assert "takes the value made at" in found[0].message and "use .detach() of the value on this line" in found[0].fix


@pytest.mark.parametrize("code, value", [(PEERS, "other"), (GAN, "fake")], ids=["mutual_learning", "gan"])
def test_detached_there_both_train_silently(snippet, code, value):
    found = snippet(code.format(target=f"{value}.detach()")).run().findings
    assert [f for f in found if f.severity in ("error", "warning")] == []
