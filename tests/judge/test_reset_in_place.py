"""A module keeps a state across batches and the script resets it between them in place (``buffer.zero_()`` in a
``reset_states()``, as spiking-network libraries do): the values go, the graph stays, and the next batch's backward
reaches the previous one's freed graph. The `autograd_error` is named at the in-place reset, where ``.detach_()``
belongs, not where the state is set; a reset that detaches, or assigns a fresh tensor, is silent."""
from __future__ import annotations

CODE = """
import torch
from torch import nn

torch.manual_seed(0)


class Neuron(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.register_buffer("v_mem", torch.zeros(2, 4))

    def reset_states(self):
        {reset}  # <- reset

    def forward(self, x):
        v = 0.9 * self.v_mem + self.fc(x)
        self.v_mem = v  # <- set
        return torch.sigmoid(v)


neuron = Neuron()
opt = torch.optim.SGD(neuron.parameters(), lr=0.1)
for batch in range(3):
    neuron.reset_states()
    loss = neuron(torch.randn(2, 3)).pow(2).mean()
    opt.zero_grad()
    try:
        loss.backward()  # <- backward
    except RuntimeError as error:
        print("refused:", error)
        break
    opt.step()
"""


def errors(snippet, reset: str):
    script = snippet(CODE.format(reset=reset))
    return script, [f for f in script.run().findings if f.severity == "error"]


def test_a_state_reset_in_place_is_named_at_the_reset(snippet):
    script, found = errors(snippet, "self.v_mem.zero_()")
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("reset"))]
    assert "in place (zero_)" in found[0].message and f"set at {script.path.name}:{script.line('set')}" in found[0].message
    assert ".zero_().detach_()" in found[0].fix
    assert any(r.role == "symptom" and r.line == script.line("backward") for r in found[0].related)


def test_a_reset_that_detaches_is_silent(snippet):
    assert errors(snippet, "self.v_mem.zero_().detach_()")[1] == []


def test_a_fresh_tensor_in_place_of_the_state_is_silent(snippet):
    assert errors(snippet, "self.v_mem = torch.zeros(2, 4)")[1] == []


def test_a_reset_by_an_operator_is_named_by_the_op_it_runs(snippet):
    script, found = errors(snippet, "self.v_mem *= 0")
    assert [(f.kind, f.line) for f in found] == [("autograd_error", script.line("reset"))]
    assert "in place (mul_)" in found[0].message and ".mul_(...).detach_()" in found[0].fix
