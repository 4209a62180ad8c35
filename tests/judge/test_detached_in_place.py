"""``x.detach_()`` cuts ``x`` from its graph in place: what it cut is looked up before the op runs (after it, the
graph is gone), so a loss computed from a clone of the model's weights that a helper detached in place (learn2learn's
``detach_module`` without ``keep_requires_grad``) is named at that ``detach_()``, not told as made from nothing."""
from __future__ import annotations

import pytest

from gradcheck_l2c import trace

CODE = """
import torch
from torch import nn
torch.manual_seed(0)

def detach_module(module):
    for key, param in module._parameters.items():
        module._parameters[key] = param.detach_()  # <- detach

net = nn.Linear(4, 2)
clone = nn.Linear(4, 2)
clone._parameters = {key: param.clone() for key, param in net._parameters.items()}
detach_module(clone)
error = clone(torch.randn(8, 4)).pow(2).mean()
error.backward()  # <- refused
"""


def test_a_clone_detached_in_place_is_named_at_the_detach(snippet):
    script = snippet(CODE)
    with pytest.raises(RuntimeError, match="does not require grad"):
        with trace() as traced:
            exec(compile(script.code, str(script.path), "exec"), {"__name__": "__main__"})
    errors = [f for f in traced.findings if f.severity == "error"]
    assert {(f.kind, f.line) for f in errors} == {("detach", script.line("detach"))}
    assert all(("symptom", script.line("refused")) in {(p.role, p.line) for p in f.related} for f in errors)


def test_a_hidden_state_detached_in_place_between_windows_is_silent(snippet):
    script = snippet("""
    import torch
    from torch import nn
    torch.manual_seed(0)
    rnn, head = nn.RNN(3, 5, batch_first=True), nn.Linear(5, 1)
    opt = torch.optim.SGD(list(rnn.parameters()) + list(head.parameters()), lr=0.1)
    h = torch.zeros(1, 2, 5)
    for window in range(4):
        out, h = rnn(torch.randn(2, 6, 3), h)
        loss = head(out).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        h.detach_()
    """)
    assert [f for f in script.run().findings if f.severity in ("error", "warning")] == []
