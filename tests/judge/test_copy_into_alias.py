"""Values with history copied, gradients on, into a tensor that shares a parameter's memory (a tensor of
``state_dict()``: Pyro's old ``random_module`` lifting sampled weights into a network) change the parameter's values,
but autograd records the copy on that alias: the parameter the forward uses stays a leaf, and what the values were
computed from gets no gradient. Named at the ``copy_`` as ``state_dict_reload``; the same copy under ``no_grad`` of
values without a gradient to keep, and a copy into a buffer of its own, are silent."""
from __future__ import annotations

CODE = """
import torch
from torch import nn
torch.manual_seed(0)

net = nn.Linear(3, 1)
loc = nn.Parameter(torch.zeros(1, 3))
optimizer = torch.optim.Adam([loc, *net.parameters()], lr=0.05)
x, y = torch.randn(16, 3), torch.randn(16, 1)
for step in range(3):
    optimizer.zero_grad()
    sample = loc + 0.1 * torch.randn(1, 3)
    {write}  # <- write
    loss = nn.functional.mse_loss({forward}, y)
    loss.backward()
    optimizer.step()
print(loc.grad)
"""


def findings(snippet, write, forward="net(x)"):
    script = snippet(CODE.format(write=write, forward=forward))
    return script, [f for f in script.run().findings if f.severity in ("error", "warning")]


def test_a_copy_into_a_state_dict_tensor_is_named(snippet):
    script, found = findings(snippet, "net.state_dict()['weight'].copy_(sample)")
    assert [(f.kind, f.severity, f.line, f.tensor) for f in found] == [
        ("state_dict_reload", "error", script.line("write"), "loc")]
    assert "shares a parameter's memory" in found[0].message
    assert "functional_call" in found[0].fix


def test_a_copy_into_a_detached_parameter_is_named(snippet):
    script, found = findings(snippet, "net.weight.detach().copy_(sample)")
    assert [(f.kind, f.line) for f in found] == [("state_dict_reload", script.line("write"))]


def test_a_copy_into_a_buffer_of_its_own_is_silent(snippet):
    """The buffer carries the copy's history into the loss: the gradient arrives."""
    _, found = findings(snippet, "buffer = torch.empty(1, 3).copy_(sample)", forward="net(x) + x @ buffer.t()")
    assert found == []
